#!/usr/bin/env bash
# `make demo`: what Gleaner sees and decides, on this machine and on the shipped examples.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build}
bin="$BUILD/bin"
py=/usr/bin/python3

section() { printf '\n== %s\n' "$*"; }

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
