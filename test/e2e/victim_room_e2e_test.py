#!/usr/bin/python3
"""A preemptor waits for its victim to be gone: the real gleaner-scheduler binary against the
test API server, which deletes a bound pod gracefully (marked, left to its node's kubelet).
The test is n1's kubelet: it holds n1's Lease in kube-node-lease, so the server leaves the
victim's deletion to it. team-b's b1 borrows all of n1; team-a, guaranteed the node,
submits a1. The scheduler reclaims b1 (deletes it); b1 is marked and still runs, so a1 is
not bound (Event GleanerWaitingForVictims) until the test, as kubelet does once the
victim's containers have stopped, deletes b1 with grace 0 and its UID: only after that
delete is a1 bound.

Usage: victim_room_e2e_test.py --bin-dir BUILD/bin   (exit 77: binary missing)"""

import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from e2e_harness import (ProcTestCase, deadline_loop, node_report,  # noqa: E402
                         run_with_bin_dir, write_kubeconfig)
from leader_election_test import http  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
APISERVER = os.path.join(HERE, "..", "apiserver", "apiserver.py")
BIN_DIR = None
KUBELET = {"Authorization": "Bearer kubelet-n1"}  # tells the test's requests apart in the log


def batch_pod(ns, name, cpu_milli):
    amounts = {"kubernetes.io/batch-cpu": str(cpu_milli),
               "kubernetes.io/batch-memory": str(1 << 30)}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": ns},
            "spec": {"schedulerName": "gleaner-scheduler", "terminationGracePeriodSeconds": 30,
                     "containers": [{"name": "c", "image": "busybox",
                                     "resources": {"requests": amounts, "limits": amounts}}]}}


def quota_tree():
    """team-a is guaranteed n1's 8 cores; team-b is guaranteed nothing and may borrow all."""
    def leaf(name, min_cpu):
        return {"name": name, "namespaces": [name], "min": {"cpu": min_cpu, "memory": "64Gi"},
                "max": {"cpu": 8, "memory": "64Gi"}}
    return {"apiVersion": "scheduling.sigs.k8s.io/v1beta1", "kind": "ElasticQuotaTree",
            "metadata": {"name": "elasticquotatree", "namespace": "kube-system"},
            "spec": {"root": {"name": "root", "max": {"cpu": 16, "memory": "128Gi"},
                              "min": {"cpu": 16, "memory": "128Gi"},
                              "children": [leaf("team-a", 8), leaf("team-b", 0)]}}}


class VictimRoom(ProcTestCase):
    def setUp(self):
        super().setUp()
        api = self.start("apiserver", ["/usr/bin/python3", APISERVER, "--port", "0"], stdin=True)
        self.api = "http://127.0.0.1:%s" % api.wait_line(r"ready port=(\d+)", 20).group(1)
        kubeconfig = write_kubeconfig(os.path.join(self.tmp.name, "kubeconfig"), self.api)
        self.post("/api/v1/nodes", {"apiVersion": "v1", "kind": "Node",
                                    "metadata": {"name": "n1"}})
        self.post("/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases", {
            "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
            "metadata": {"name": "n1"}, "spec": {"holderIdentity": "n1"}}, KUBELET)
        self.post("/apis/scheduling.sigs.k8s.io/v1beta1/namespaces/kube-system/"
                  "elasticquotatrees", quota_tree())
        sched = self.start("scheduler", [
            os.path.join(BIN_DIR, "gleaner-scheduler"), "run", "--listen", "127.0.0.1:0",
            "--kubeconfig", kubeconfig, "--report-auth", "none", "--tick-ms", "50"])
        self.url = "http://127.0.0.1:" + sched.wait_line(r"listening on port (\d+)", 20).group(1)
        self.seq = 0

    def post(self, path, body, headers=None):
        status, text = http("POST", self.api + path, body, headers)
        self.assertIn(status, (200, 201), text)
        return json.loads(text)

    def report(self):
        """n1's agent: 8 cores of batch room."""
        self.seq += 1
        http("POST", self.url + "/api/v1/reports", node_report("n1", self.seq, "e", 8000, 64 << 30))

    def pod(self, ns, name):
        status, text = http("GET", self.api + "/api/v1/namespaces/%s/pods/%s" % (ns, name))
        return json.loads(text) if status == 200 else None

    def until(self, what, predicate, timeout=20):
        for _ in deadline_loop(timeout, 0.05):
            self.report()
            got = predicate()
            if got:
                return got
        self.fail("not within %ss: %s" % (timeout, what))

    def events(self, ns, reason):
        _, text = http("GET", self.api + "/api/v1/namespaces/%s/events" % ns)
        return [e for e in json.loads(text)["items"] if e.get("reason") == reason]

    def requests(self):
        _, text = http("GET", self.api + "/_admin/requests")
        return json.loads(text)

    def test_the_preemptor_is_bound_only_after_its_victim_is_gone(self):
        self.report()
        b1 = self.post("/api/v1/namespaces/team-b/pods", batch_pod("team-b", "b1", 8000))
        self.until("b1 bound", lambda: (self.pod("team-b", "b1") or {}).get(
            "spec", {}).get("nodeName") == "n1")
        status, text = http("PATCH", self.api + "/api/v1/namespaces/team-b/pods/b1/status",
                            {"status": {"phase": "Running"}},
                            dict(KUBELET, **{"Content-Type": "application/merge-patch+json"}))
        self.assertEqual(status, 200, text)

        self.post("/api/v1/namespaces/team-a/pods", batch_pod("team-a", "a1", 4000))
        marked = self.until("b1 reclaimed: marked for deletion", lambda: (
            lambda p: p if p and p["metadata"].get("deletionTimestamp") else None)(
                self.pod("team-b", "b1")))
        self.assertEqual(marked["metadata"]["deletionGracePeriodSeconds"], 30)
        # b1 terminates on n1: a1 waits for it, and says so.
        waiting = self.until("a1's GleanerWaitingForVictims",
                             lambda: self.events("team-a", "GleanerWaitingForVictims"))
        self.assertIn("team-b/b1", waiting[0]["message"])
        self.assertFalse(self.pod("team-a", "a1")["spec"].get("nodeName"),
                         "a1 bound beside a victim that still runs (kubelet: OutOfbatch-cpu)")
        self.assertIsNotNone(self.pod("team-b", "b1"), "the victim is still there")

        # n1's kubelet: b1's containers have stopped; grace 0 and its UID.
        status, text = http("DELETE", self.api + "/api/v1/namespaces/team-b/pods/b1",
                            {"gracePeriodSeconds": 0,
                             "preconditions": {"uid": b1["metadata"]["uid"]}}, KUBELET)
        self.assertEqual(status, 200, text)
        self.assertIsNone(self.pod("team-b", "b1"))
        self.until("a1 bound to n1", lambda: (self.pod("team-a", "a1") or {}).get(
            "spec", {}).get("nodeName") == "n1")
        log = self.requests()
        finished = [i for i, r in enumerate(log) if r["method"] == "DELETE" and
                    r["token"] == "kubelet-n1"]
        binds = [i for i, r in enumerate(log) if r["method"] == "POST" and
                 r["path"] == "/api/v1/namespaces/team-a/pods/a1/binding"]
        self.assertEqual(len(finished), 1)
        self.assertTrue(binds and binds[0] > finished[0],
                        "a1's binding was asked for before its victim was gone: %s" % binds)
        _, metrics = http("GET", self.url + "/metrics")
        self.assertIn("gleaner_scheduler_binds_waiting_for_victims_total 1\n", metrics)


if __name__ == "__main__":
    run_with_bin_dir(globals(), "gleaner-scheduler")
