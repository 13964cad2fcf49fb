#!/usr/bin/python3
"""gleaner-scheduler stopped in the middle of a gang, then started again: a pod group of four
(min-available 4) is admitted whole; the API server holds back the binding of its third
member (test/apiserver's stall fault), so when the process is stopped (SIGKILL, or SIGTERM)
two members are bound and two pending. The next process rebuilds the gang from what the API
server holds and binds the other two, deleting nothing. Before the gang layer resumed gangs
found partly bound, the two pending members were never bound (their gang waited for four
pending members that could never come), though the nodes had room.

Usage: gang_restart_e2e_test.py --bin-dir BUILD/bin   (exit 77: binary missing)"""

import json
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from e2e_harness import Proc, deadline_loop, node_report, run_with_bin_dir  # noqa: E402
from leader_election_test import http  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
APISERVER = os.path.join(HERE, "..", "apiserver", "apiserver.py")
BIN_DIR = None
PODS = "/api/v1/namespaces/default/pods"
MEMBERS = ("pgb-0", "pgb-1", "pgb-2", "pgb-3")
FINISH = 20.0  # seconds for the restarted process to bind the rest (it takes well under 1)


def member(name):
    """A pod group member as a user creates it: 1 core and 1 GiB of batch resources."""
    amounts = {"kubernetes.io/batch-cpu": "1000", "kubernetes.io/batch-memory": str(1 << 30)}
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "default",
                         "labels": {"pod-group.scheduling.sigs.k8s.io/name": "pgb",
                                    "pod-group.scheduling.sigs.k8s.io/min-available": "4"}},
            "spec": {"schedulerName": "gleaner-scheduler",
                     "containers": [{"name": "c", "image": "busybox",
                                     "resources": {"requests": amounts, "limits": amounts}}]}}


class GangRestart(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory(prefix="gleaner-restart-")
        self.procs = []
        api = self.start("apiserver", ["/usr/bin/python3", APISERVER, "--port", "0"], stdin=True)
        self.api = "http://127.0.0.1:%s" % api.wait_line(r"ready port=(\d+)", 20).group(1)
        self.kubeconfig = os.path.join(self.tmp.name, "kubeconfig")
        with open(self.kubeconfig, "w") as f:
            f.write("apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: %s}}]\n"
                    "users: [{name: u, user: {}}]\ncontexts: [{name: x, context: {cluster: c, "
                    "user: u}}]\ncurrent-context: x\n" % self.api)
        for node in ("n1", "n2"):
            self.assertEqual(http("POST", self.api + "/api/v1/nodes",
                                  {"apiVersion": "v1", "kind": "Node",
                                   "metadata": {"name": node}})[0], 201)
        self.seq = 0

    def start(self, name, argv, stdin=False):
        p = Proc(name, argv, self.tmp.name, stdin=stdin)
        self.procs.append(p)
        return p

    def start_scheduler(self, name):
        p = self.start(name, [
            os.path.join(BIN_DIR, "gleaner-scheduler"), "run", "--listen", "127.0.0.1:0",
            "--kubeconfig", self.kubeconfig, "--report-auth", "none", "--tick-ms", "50"])
        self.url = "http://127.0.0.1:" + p.wait_line(r"listening on port (\d+)", 20).group(1)
        return p

    def tearDown(self):
        http("POST", self.api + "/_admin/reset")  # wakes the stalled binding
        for p in reversed(getattr(self, "procs", [])):
            p.stop()
        if hasattr(self, "_outcome") and any(
                e for _, e in getattr(self._outcome, "errors", []) if e):
            for p in self.procs:
                print("---- %s\n%s" % (p.name, p.text()[-4000:]))
        self.tmp.cleanup()

    def report(self):
        """Both agents report: n1 with room for 2 members, n2 for 3."""
        self.seq += 1
        for node, cpu in (("n1", 2000), ("n2", 3000)):
            http("POST", self.url + "/api/v1/reports",
                 node_report(node, self.seq, "epoch-" + node, cpu, 16 << 30))

    def pods(self):
        status, body = http("GET", self.api + PODS)
        self.assertEqual(status, 200)
        return {p["metadata"]["name"]: p for p in json.loads(body)["items"]}

    def bound(self):
        return {n: p["spec"].get("nodeName", "") for n, p in self.pods().items()}

    def requests(self, method, path):
        _, body = http("GET", self.api + "/_admin/requests")
        return [r for r in json.loads(body) if r["method"] == method and r["path"] == path]

    def restart_mid_gang(self, stop):
        first = self.start_scheduler("scheduler-1")
        self.report()
        # The third member's binding is held by the API server: the scheduler's binding
        # worker waits on it, the fourth queued behind it.
        held = PODS + "/pgb-2/binding"
        http("POST", self.api + "/_admin/stall?count=1&seconds=300&method=POST&prefix=" + held)
        for name in MEMBERS:
            self.assertEqual(http("POST", self.api + PODS, member(name))[0], 201)
        for _ in deadline_loop(15, 0.1):
            self.report()
            b = self.bound()
            if b["pgb-0"] and b["pgb-1"] and self.requests("POST", held):
                break
        else:
            self.fail("the first two members were not bound: %s" % self.bound())
        before = self.pods()
        self.assertEqual([n for n in MEMBERS if before[n]["spec"].get("nodeName")],
                         ["pgb-0", "pgb-1"])
        stop(first)

        self.start_scheduler("scheduler-2")
        for _ in deadline_loop(FINISH, 0.1):
            self.report()
            if all(self.bound().values()):
                break
        else:
            self.fail("the gang was not finished within %.0f s after the restart: %s"
                      % (FINISH, self.bound()))
        after = self.pods()
        for name in ("pgb-0", "pgb-1"):  # the same pods, where they were
            self.assertEqual(after[name]["metadata"]["uid"], before[name]["metadata"]["uid"])
            self.assertEqual(after[name]["spec"]["nodeName"], before[name]["spec"]["nodeName"])
        self.assertEqual([r for r in json.loads(http("GET", self.api + "/_admin/requests")[1])
                          if r["method"] == "DELETE" and r["path"].startswith(PODS)], [])
        _, metrics = http("GET", self.url + "/metrics")
        self.assertIn('gleaner_scheduler_recovered_gangs_total{outcome="resumed"} 1', metrics)
        self.assertIn("gleaner_scheduler_partial_gangs 0", metrics)

    def test_a_gang_half_bound_by_a_killed_scheduler_is_finished(self):
        def kill(p):
            p.proc.kill()
            p.proc.wait(5)
        self.restart_mid_gang(kill)

    def test_a_gang_half_bound_by_a_stopped_scheduler_is_finished(self):
        self.restart_mid_gang(lambda p: p.stop())


if __name__ == "__main__":
    run_with_bin_dir(globals(), "gleaner-scheduler")
