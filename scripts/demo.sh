#!/usr/bin/env bash
# `make demo`: what Gleaner sees and decides, then Gleaner live on this machine's cgroups.
#
# usage: scripts/demo.sh [BUILD_DIR] [--seconds N] [--live-only]
#   BUILD_DIR    where bin/gleaner-agent and bin/gleaner-scheduler are (default: build)
#   --seconds N  length of the live run (default: $GLEANER_DEMO_SECONDS or 120)
#   --live-only  skip the one-shot first section
# Without root the live run is replaced by the scheduler simulator on the shipped scenarios.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=build
if [ $# -gt 0 ] && [ "${1#-}" = "$1" ]; then BUILD=$1; shift; fi
seconds=${GLEANER_DEMO_SECONDS:-120}
live_only=0
while [ $# -gt 0 ]; do
  case "$1" in
    --seconds) seconds=$2; shift 2 ;;
    --live-only) live_only=1; shift ;;
    *) echo "demo: unknown argument $1" >&2; exit 2 ;;
  esac
done
bin="$BUILD/bin"
py=/usr/bin/python3

section() { printf '\n== %s\n' "$*"; }

simulate_summary() {
  "$bin/gleaner-scheduler" simulate --scenario "$1" |
    "$py" -c 'import json,sys; r=json.load(sys.stdin); s=r["summary"]
print("  %-28s completed %d, pending %d, makespan %ss" % (sys.argv[1], s["completed"],
      s["pending"], s["makespanSeconds"]))' "$(basename "$1")"
}

if [ "$live_only" -eq 0 ]; then
  section "This node, as gleaner-agent sees it (gleaner-agent report)"
  "$bin/gleaner-agent" report

  section "Batch capacity of the example node (gleaner-agent calc)"
  echo "snapshot: examples/node-snapshot.json (32 CPU / 128Gi, LS pods using 6 CPU / 40Gi)"
  "$bin/gleaner-agent" calc --snapshot examples/node-snapshot.json \
    --config-dir examples/ack-slo-config |
    "$py" -c 'import json,sys; r=json.load(sys.stdin); b=r["batch"] or {};
print("colocation %s: batch-cpu %s millicores, batch-memory %.1f GiB" % (r["colocation"],
      b.get("kubernetes.io/batch-cpu"), b.get("kubernetes.io/batch-memory", 0) / 2**30))'

  section "Six Spark jobs on six batch CPUs (gleaner-scheduler simulate)"
  "$bin/gleaner-scheduler" simulate --scenario scheduler/scenarios/spark-deadlock.json |
    "$py" -c 'import json,sys; r=json.load(sys.stdin)
for j in r["jobs"]:
    print("  %-12s %-10s started %4ss finished %4ss on %s" % (j["name"], j["state"],
          j.get("startedAt"), j.get("finishedAt"), j.get("cluster")))
s=r["summary"]; print("  completed %d, pending %d, makespan %ss" % (s["completed"], s["pending"], s["makespanSeconds"]))'
fi

if [ "$(id -u)" -ne 0 ]; then
  section "Live run skipped: it needs root (it creates cgroups and moves processes into them)"
  echo "Run 'sudo make demo' for the live run. Meanwhile, the live run's fleet scenario in the"
  echo "simulator (scheduler/scenarios/ack-one-fleet.json: a hub placing spark-pi-1..3 into"
  echo "members m1 and m2 by the batch capacity their nodes report):"
  "$bin/gleaner-scheduler" simulate --scenario scheduler/scenarios/ack-one-fleet.json |
    "$py" -c 'import json,sys; r=json.load(sys.stdin)
for j in r["jobs"]:
    print("  %-12s %-10s in %s, finished %4ss; executors replaced %d, reclaimed %d" % (
          j["name"], j["state"], j.get("cluster"), j.get("finishedAt"),
          j.get("executorsReplaced", 0), j.get("reschedules", 0)))'
  echo "Not shown without root: real cgroups, the agent, LS latency, the test API servers."
  echo "Every shipped scenario in the simulator:"
  for f in scheduler/scenarios/*.json; do simulate_summary "$f"; done
  exit 0
fi
for tool in wrk kubectl "$bin/gleaner-agent" "$bin/gleaner-scheduler" "$py"; do
  if ! command -v "$tool" >/dev/null 2>&1; then
    echo "demo: $tool not found (run scripts/install-deps.sh and build first)" >&2
    exit 1
  fi
done

section "Live: Gleaner on this machine's real cgroups for ${seconds}s (Ctrl-C stops and cleans up)"
run_dir=$(mktemp -d /tmp/gleaner-demo-XXXXXX)
live_pid=""
# Whatever happens (end, error, Ctrl-C, kill), stop the live run and remove every process,
# cgroup directory and symlink it made. live.py cleans up itself; the --cleanup pass is the
# fallback from the state it recorded, for when it was killed outright.
cleanup() {
  trap - EXIT INT TERM
  if [ -n "$live_pid" ] && kill -0 "$live_pid" 2>/dev/null; then
    kill -TERM "$live_pid" 2>/dev/null || true
    wait "$live_pid" 2>/dev/null || true
  fi
  "$py" scripts/demo/live.py --cleanup "$run_dir" || true
}
trap cleanup EXIT
trap 'cleanup; exit 130' INT
trap 'cleanup; exit 143' TERM
# In the background so the traps run at once on a signal (bash defers them while it waits
# for a foreground command).
"$py" scripts/demo/live.py --build "$BUILD" --run-dir "$run_dir" --seconds "$seconds" &
live_pid=$!
status=0
wait "$live_pid" || status=$?
live_pid=""
exit "$status"
