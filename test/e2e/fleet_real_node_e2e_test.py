#!/usr/bin/python3
"""End to end: the demo's fleet (scripts/demo/fleet.py, the same code `make demo` runs) with
a REAL member node, in its short form.

    hub + members m1, m2 (test API servers), gleaner-scheduler with --hub, --cluster, the
    colocation webhook, reports over HTTPS checked by TokenReview against each member
    + the Spark operator emulator per member; m1's is also the kubelet of m1-n1, a real
      node (pods as processes in kubelet's cgroups under a scratch hierarchy), where an LS
      service runs and gleaner-agent runs in its production mode with --cluster m1
    + m1-n2 and m2-n1 report-driven (their reports posted as their agents would)
    + the user's side: kubectl apply of the ACK One objects to the hub.

Asserted, each from what the run measured: spark-pi-1 placed in m1 by the batch room
m1-n1's agent reports; its executors used real CPU in their BE pod cgroups; a real LS surge
shrank m1-n1's batch room below what spark-pi-2 needs (it fitted before) and spark-pi-2
went to m2 while spark-pi-1's executors kept running; the same surge with the agent's
threshold strategies switched off in its ack-slo-config ran with no BE limit and gave BE
more CPU, both surges' LS p99 measured over the same first seconds; memory pressure on m1-n1 (an
executor's work grown past the memoryEvictThresholdPercent the story sets) made
gleaner-agent evict that executor (its memory-evict counter rose, the Eviction API call came
with its ServiceAccount's token, it posted its GleanerEvicted Event) and Spark replaced it;
spark-pi-3's driver, bound to m1-n2 whose kubelet never starts it, reclaimed
and rescheduled; every application COMPLETED on the hub; afterwards no cgroup directory,
process or listening port of the run is left.

Root only (real cgroups; exit 77, skipped, otherwise). Usage:
  fleet_real_node_e2e_test.py --bin-dir BUILD/bin   (exit 77: binary missing)
GLEANER_E2E_KEEP_LOGS=1 keeps the run directory (the processes' logs)."""

import os
import shutil
import socket
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(REPO, "scripts", "demo"))
import fleet  # noqa: E402
import fleet_cluster  # noqa: E402
import fleet_node  # noqa: E402
from e2e_harness import run_with_bin_dir  # noqa: E402

BIN_DIR = None
SECONDS = 20  # the demo's --seconds: each short job runs 3 s


def alive(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().split(") ", 1)[1][0] != "Z"
    except OSError:
        return False


class FleetRealNodeE2E(unittest.TestCase):
    def setUp(self):
        reason = fleet_node.skip_reason()
        if reason:
            raise unittest.SkipTest(reason)
        self.run_dir = tempfile.mkdtemp(prefix="gleaner-fleet-e2e-")
        self.pids = []
        self.fleet = fleet.Fleet(os.path.dirname(BIN_DIR), self.run_dir, self.pids.append,
                                 SECONDS)
        self.addCleanup(self.remove_run_dir)
        self.addCleanup(self.fleet.stop)

    def remove_run_dir(self):
        if os.environ.get("GLEANER_E2E_KEEP_LOGS") or not self.passed():
            sys.stderr.write("run directory kept: %s\n" % self.run_dir)
            for name in sorted(os.listdir(os.path.join(self.run_dir, "fleet"))):
                if name.endswith(".log") and not self.passed():
                    with open(os.path.join(self.run_dir, "fleet", name), errors="replace") as f:
                        sys.stderr.write("===== %s (tail)\n%s\n" % (name, f.read()[-3000:]))
            return
        shutil.rmtree(self.run_dir, True)

    def passed(self):
        result = getattr(getattr(self, "_outcome", None), "result", None)
        return result is not None and not any(
            t is self for t, _ in list(result.failures) + list(result.errors))

    def test_the_fleet_story_on_a_real_node(self):
        try:
            doc = self.fleet.run()
        except fleet.FleetError as e:
            self.fail("the fleet run stopped: %s\nevents:\n%s" % (e, "\n".join(
                self.fleet.events)))
        jobs = {j["name"]: j for j in doc["jobs"]}
        real = doc["realNode"]
        sys.stderr.write("\n".join(doc["events"]) + "\n")
        # 1. Placement by the batch room the real node's agent reports.
        self.assertEqual(jobs["spark-pi-1"]["members"], ["m1"], jobs)
        self.assertGreater(real["executorCpuSecondsStep1"], 0, real)
        # 2. The surge: m1-n1's room fitted spark-pi-2 before and not under the surge.
        self.assertGreaterEqual(real["batchFreeBeforeSurgeMilli"], real["sparkPi2Milli"], real)
        self.assertLess(real["batchFreeUnderSurgeMilli"], real["sparkPi2Milli"], real)
        self.assertEqual(jobs["spark-pi-2"]["members"], ["m2"], jobs)
        self.assertTrue(real["sparkPi1ExecutorsKeptAcrossSurge"], real)
        self.assertTrue(real["suppressReactionsMs"], "no BE quota cut after the surge: %s" % real)
        # 2b. The same surge unmanaged (the agent's threshold strategies off): no BE limit
        # at any read while it lasted, BE used more CPU than under Gleaner's cut, and the
        # LS p99 of both over the same first seconds.
        managed, unmanaged = real["surge"], real["surgeUnmanaged"]
        self.assertIsNone(unmanaged["beQuotaCoresLowest"], real)
        self.assertGreater(unmanaged["beCores"], managed["beCores"], real)
        for surge in (managed, unmanaged):
            self.assertGreaterEqual(surge["loadSeconds"], fleet.SURGE_S, real)
            self.assertGreater(surge["lsRequests"], 0, real)
        # 3. The agent's eviction under memory pressure, not the story's.
        self.assert_agent_evicted(doc)
        self.assertGreaterEqual(jobs["spark-pi-1"]["executorsReplaced"], 1, jobs)
        # No ping-pong: the API server marked the victim EvictionByEvictionAPI, so the
        # scheduler kept spark-pi-1 off m1-n1 (m1's only node that starts pods) until the
        # node's room had held for the reclaim hold; only then did the replacement go back.
        self.assertEqual(real["reclaimHold"]["replacementNode"], fleet_node.NODE, real)
        self.assertGreaterEqual(real["replacementSeconds"], fleet_cluster.RECLAIM_HOLD_S - 1,
                                real)
        # 4-5.
        self.assertEqual(jobs["spark-pi-3"]["reclaimed"], 1, jobs)
        self.assertEqual(jobs["spark-pi-3"]["members"], ["m1", "m2"], jobs)
        self.assertEqual({j["state"] for j in doc["jobs"]}, {"COMPLETED"}, jobs)
        self.assertGreater(real["beCpuSecondsByExecutors"], real["executorCpuSecondsStep1"],
                           real)
        # Nothing left behind.
        self.fleet.stop()
        self.assertTrue(doc["scratchBases"])
        self.assertEqual([b for b in doc["scratchBases"] if os.path.exists(b)], [])
        self.assertEqual([p for p in self.pids if alive(p)], [])
        for port in doc["ports"]:
            with socket.socket() as s:
                self.assertNotEqual(s.connect_ex(("127.0.0.1", port)), 0, port)


    def assert_agent_evicted(self, doc):
        real = self.fleet.real
        victim = real["evictedPod"]
        self.assertGreaterEqual(real["memoryEvictionsByAgent"], 1, real)
        self.assertGreaterEqual(real["agentEvictionsByReason"].get("memory-evict", 0), 1, real)
        self.assertEqual(doc["evictions"], sum(real["agentEvictionsByReason"].values()), doc)
        self.assertGreaterEqual(real["nodeMemoryAtEvictionPercent"],
                                real["memoryEvictThresholdPercent"], real)
        self.assertLess(real["nodeMemoryAfterPercent"], real["memoryEvictThresholdPercent"], real)
        # Every Eviction API call on m1 came with the agent pod's ServiceAccount token, and
        # m1 says whose token that is; one of them was the victim's.
        _, logged = self.fleet.api(fleet_node.MEMBER, "/_admin/requests")
        calls = [r for r in logged if r["method"] == "POST" and r["path"].endswith("/eviction")]
        self.assertIn("/api/v1/namespaces/spark/pods/%s/eviction" % victim,
                      [r["path"] for r in calls])
        self.assertEqual({r["token"] for r in calls}, {self.fleet.node.kubelet_token})
        _, review = self.fleet.api(fleet_node.MEMBER,
                                   "/apis/authentication.k8s.io/v1/tokenreviews", "POST", {
                                       "apiVersion": "authentication.k8s.io/v1",
                                       "kind": "TokenReview",
                                       "spec": {"token": self.fleet.node.kubelet_token}})
        self.assertEqual(review["status"]["user"]["username"],
                         "system:serviceaccount:kube-system:gleaner-agent", review)
        _, events = self.fleet.api(fleet_node.MEMBER, "/api/v1/namespaces/spark/events")
        self.assertIn("evicted by gleaner-agent on %s: memory-evict" % fleet_node.NODE, [
            e.get("message") for e in events["items"] if e.get("reason") == "GleanerEvicted"
            and e["involvedObject"]["name"] == victim], events)


if __name__ == "__main__":
    reason = fleet_node.skip_reason()
    if reason:
        print("SKIP: " + reason)
        sys.exit(77)
    run_with_bin_dir(globals(), "gleaner-agent", "gleaner-scheduler")
