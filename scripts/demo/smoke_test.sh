#!/usr/bin/env bash
# ctest `demo_live_smoke`: the live demo for a short run. Passes when it exited 0, printed
# the summary, the memory phase with Gleaner evicted and was not OOM-killed, summary.json
# shows every fleet job submitted COMPLETED, each fleet step either shown (and what it shows
# true) or under "Not shown:" with its reason, and it left no scratch cgroup directory,
# symlink root, process or listening port behind. What a busy machine cannot give a step
# (batch room, BE CPU) is not checked, only that the step says so: it passes beside busy
# loops, and still fails when Gleaner does (a crash, a wrong placement, no eviction).
# Exit 77 (skipped) without root or without wrk.
# usage: smoke_test.sh SOURCE_DIR BUILD_DIR [SECONDS]
set -uo pipefail
src=$1
build=$2
seconds=${3:-15}

if [ "$(id -u)" -ne 0 ]; then echo "SKIP: the live demo needs root"; exit 77; fi
if ! command -v wrk >/dev/null 2>&1; then echo "SKIP: wrk not installed"; exit 77; fi

out=$(mktemp)
trap 'rm -f "$out"' EXIT
bash "$src/scripts/demo.sh" "$build" --live-only --seconds "$seconds" >"$out" 2>&1
status=$?
cat "$out"
fail=0
[ "$status" -eq 0 ] || { echo "FAIL: demo.sh exited with $status"; fail=1; }
for line in "== Summary" "LS p99, worst step" "BE CPU harvested" "What this run showed:" \
  "LS latency: " "BE harvest: " "Memory (a scratch node" "Memory: " "Fleet: " \
  "Not shown: " "summary.json "; do
  grep -q "$line" "$out" || { echo "FAIL: no '$line' in the output"; fail=1; }
done
# The memory phase does not hinge on CPU noise: with Gleaner the agent evicts BE executors at
# memoryEvictThresholdPercent and the kernel kills nothing.
if ! grep -Eq "with Gleaner +peak +[0-9]+% of the node; kernel OOM kills 0; agent evictions [1-9]" \
  "$out"; then
  echo "FAIL: with Gleaner, the memory phase had OOM kills or no eviction"
  fail=1
fi

run_dir=$(sed -n 's/^ logs *\(\/tmp\/gleaner-demo-[A-Za-z0-9]*\) .*/\1/p' "$out" | head -1)
if [ -z "$run_dir" ]; then
  echo "FAIL: the summary does not name the run directory"
  exit 1
fi
# Processes: every one the demo starts names its run directory on its command line.
# (Looked up from Python with the directory in the environment, so the search itself,
# whose command line would otherwise name it, is not a match.)
left=$(RUN_DIR="$run_dir" /usr/bin/python3 -c '
import os
needle = os.environ["RUN_DIR"].encode()
for pid in filter(str.isdigit, os.listdir("/proc")):
    try:
        cmd = open("/proc/%s/cmdline" % pid, "rb").read()
    except OSError:
        continue
    if needle in cmd:
        print(pid, cmd.replace(b"\0", b" ").decode(errors="replace"))')
if [ -n "$left" ]; then
  echo "FAIL: processes left behind:"
  echo "$left"
  fail=1
fi
# Cgroups: the demo prints the scratch trees it made (gleaner-demo-<pid> under its own
# cgroup in each hierarchy); none may remain.
bases=$(sed -n 's/^scratch kubepods tree ([^)]*): \(.*\); cgroup root.*/\1/p' "$out")
if [ -z "$bases" ]; then echo "FAIL: the demo did not name its scratch cgroups"; fail=1; fi
for d in $bases; do
  if [ -e "$d" ]; then echo "FAIL: cgroup directory left behind: $d"; fail=1; fi
done
if [ -e "$run_dir/cgroot" ] || [ -e "$run_dir/state.json" ]; then
  echo "FAIL: symlink root or state file left in $run_dir"
  fail=1
fi
# summary.json: every fleet job COMPLETED, the facts of the run present, and nothing of the
# fleet (API servers, Spark operator emulators, gleaner-scheduler) left running or listening.
if ! SUMMARY="$run_dir/summary.json" /usr/bin/python3 - <<'PY'
import json, os, socket, sys
doc = json.load(open(os.environ["SUMMARY"]))
errors = []
if doc["fleet"] is None:
    print("FAIL: summary.json: no fleet run: %s" % doc["fleetError"])
    sys.exit(1)
jobs = {j["name"]: j for j in doc["jobs"]}
shown, not_shown = doc["fleet"]["stepsShown"], doc["fleet"]["notShown"]
steps = ["placement", "surge", "unmanaged_surge", "eviction", "reclaim", "completion"]
# Every step shown or not shown with a reason. Steps 4 and 5 need nothing of the machine.
if len(shown) + len(not_shown) != len(steps) or not {"reclaim", "completion"} <= set(shown):
    errors.append("steps shown %s, not shown %s" % (shown, not_shown))
for n in not_shown:
    if not n["reason"]:
        errors.append("a step not shown without a reason: %s" % n)
if not set(jobs) <= {"spark-pi-1", "spark-pi-2", "spark-pi-3"} or "spark-pi-3" not in jobs:
    errors.append("jobs: %s" % doc["jobs"])
for j in jobs.values():
    if j["state"] != "COMPLETED" or j["member"] not in ("m1", "m2"):
        errors.append("job not COMPLETED in a member: %s" % j)
# What each step shown must have done.
if "placement" in shown and jobs["spark-pi-1"]["member"] != "m1":
    errors.append("spark-pi-1 not in m1, the member with room for it: %s" % jobs)
if "surge" in shown and jobs["spark-pi-2"]["member"] != "m2":
    errors.append("spark-pi-2 not in m2 after m1's room shrank: %s" % jobs)
if "eviction" in shown and (jobs["spark-pi-1"]["executorsReplaced"] < 1 or
                            doc["evictions"]["fleet"] < 1):
    errors.append("no executor evicted and replaced: %s %s" % (jobs, doc["evictions"]))
if jobs.get("spark-pi-3", {}).get("reclaimed", 0) < 1:
    errors.append("no driver reclaimed: %s" % jobs)
for phase in ("unmanaged", "withGleaner"):
    if doc["lsP99Ms"][phase]["worstStep"] is None:
        errors.append("no LS p99 for %s" % phase)
if not doc["beCpuSecondsHarvested"]["withGleaner"] > 0:
    errors.append("no BE CPU harvested: %s" % doc["beCpuSecondsHarvested"])
if set(doc["suppressReactionsMs"]) < {"p50", "p99", "reactions", "surges"}:
    errors.append("suppressReactionsMs: %s" % doc["suppressReactionsMs"])
if doc["evictions"]["total"] < doc["evictions"]["fleet"]:
    errors.append("evictions: %s" % doc["evictions"])
for pid in doc["fleet"]["pids"]:
    try:
        cmd = open("/proc/%d/cmdline" % pid, "rb").read()
    except OSError:
        continue
    if b"apiserver.py" in cmd or b"spark_emulator.py" in cmd or b"gleaner-scheduler" in cmd:
        errors.append("fleet process left behind: %d %s" % (pid, cmd.replace(b"\0", b" ")))
for base in doc["fleet"].get("scratchBases", []):
    if os.path.exists(base):
        errors.append("the real node's cgroup directory left behind: %s" % base)
for port in doc["fleet"]["ports"]:
    with socket.socket() as s:
        if s.connect_ex(("127.0.0.1", port)) == 0:
            errors.append("port %d still listening" % port)
for e in errors:
    print("FAIL: summary.json: " + e)
sys.exit(1 if errors else 0)
PY
then
  fail=1
fi
[ "$fail" -eq 0 ] && rm -rf "$run_dir"
exit "$fail"
