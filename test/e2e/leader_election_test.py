#!/usr/bin/python3
"""Two gleaner-scheduler replicas with --leader-elect against the test API server (which
serves coordination.k8s.io/v1 Leases): exactly one leads (/readyz 200, the other 503 and
refusing reports), the leader binds pods; killed, the standby takes over within the lease
duration and binds the next pod; stopped cleanly, it hands the Lease back at once; no pod is
ever bound twice.

Usage: leader_election_test.py --bin-dir BUILD/bin   (exit 77: binary missing)"""

import json
import os
import sys
import tempfile
import time
import unittest
import urllib.error
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from e2e_harness import Proc, deadline_loop, node_report, run_with_bin_dir  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
APISERVER = os.path.join(HERE, "..", "apiserver", "apiserver.py")
BIN_DIR = None
LEASE = 2.0  # seconds: short, so a failover is seconds, not the default 15


def http(method, url, body=None, headers=None):
    req = urllib.request.Request(url, data=json.dumps(body).encode() if body else None,
                                 method=method, headers=dict({"Content-Type": "application/json"},
                                                             **(headers or {})))
    try:
        with urllib.request.urlopen(req, timeout=5) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()
    except OSError:
        return None, ""


def driver(name):
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "default",
                         "labels": {"spark-role": "driver", "spark-app-selector": name}},
            "spec": {"schedulerName": "gleaner-scheduler",
                     "containers": [{"name": "spark", "image": "spark", "resources": {
                         "requests": {"kubernetes.io/batch-cpu": "1000",
                                      "kubernetes.io/batch-memory": "1073741824"},
                         "limits": {"kubernetes.io/batch-cpu": "1000",
                                    "kubernetes.io/batch-memory": "1073741824"}}}]}}


class LeaderElection(unittest.TestCase):
    def setUp(self):
        binary = os.path.join(BIN_DIR, "gleaner-scheduler")  # run_with_bin_dir saw it
        self.tmp = tempfile.TemporaryDirectory(prefix="gleaner-le-")
        self.procs = []
        # stdin kept open: the API server takes its end as the signal to stop.
        api = self.start("apiserver", ["/usr/bin/python3", APISERVER, "--port", "0"], stdin=True)
        self.api = "http://127.0.0.1:%s" % api.wait_line(r"ready port=(\d+)", 20).group(1)
        kubeconfig = os.path.join(self.tmp.name, "kubeconfig")
        with open(kubeconfig, "w") as f:
            f.write("apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: %s}}]\n"
                    "users: [{name: u, user: {}}]\ncontexts: [{name: x, context: {cluster: c, "
                    "user: u}}]\ncurrent-context: x\n" % self.api)
        self.assertEqual(http("POST", self.api + "/api/v1/nodes",
                              {"apiVersion": "v1", "kind": "Node",
                               "metadata": {"name": "n1"}})[0], 201)
        self.replicas = {}
        for name in ("a", "b"):
            p = self.start("scheduler-" + name, [
                binary, "run", "--listen", "127.0.0.1:0", "--kubeconfig", kubeconfig,
                # Reports here test leadership, not identity (agent_identity_e2e does that).
                "--report-auth", "none", "--leader-elect", "--leader-elect-identity", name, "--tick-ms", "50",
                "--leader-elect-lease-duration", str(LEASE),
                "--leader-elect-renew-deadline", str(LEASE * 0.75),
                "--leader-elect-retry-period", "0.2"])
            port = p.wait_line(r"listening on port (\d+)", 20).group(1)
            self.replicas[name] = (p, "http://127.0.0.1:" + port)
        self.seq = 0

    def start(self, name, argv, stdin=False):
        p = Proc(name, argv, self.tmp.name, stdin=stdin)
        self.procs.append(p)
        return p

    def tearDown(self):
        for p in reversed(getattr(self, "procs", [])):
            p.stop()
        if hasattr(self, "_outcome") and any(
                e for _, e in getattr(self._outcome, "errors", []) if e):
            for p in self.procs:
                print("---- %s\n%s" % (p.name, p.text()[-3000:]))
        if hasattr(self, "tmp"):
            self.tmp.cleanup()

    def ready(self, name):
        return http("GET", self.replicas[name][1] + "/readyz")[0] == 200

    def leader(self, timeout, exclude=()):
        for _ in deadline_loop(timeout, 0.02):
            ready = [n for n in self.replicas if n not in exclude and self.ready(n)]
            if len(ready) == 1:
                return ready[0]
            self.assertLessEqual(len(ready), 1, "two replicas ready at once")
        self.fail("no leader within %.1fs" % timeout)

    def post_report(self, name):
        self.seq += 1
        return http("POST", self.replicas[name][1] + "/api/v1/reports",
                    node_report("n1", self.seq, "epoch-test", 4000, 16 << 30))[0]

    def bind_and_count(self, leader, pod):
        self.assertEqual(self.post_report(leader), 200)
        self.assertEqual(http("POST", self.api + "/api/v1/namespaces/default/pods",
                              driver(pod))[0], 201)
        for _ in deadline_loop(15):
            status, body = http("GET", self.api + "/api/v1/namespaces/default/pods/" + pod)
            if status == 200 and json.loads(body)["spec"].get("nodeName"):
                break
        else:
            self.fail("%s never bound" % pod)

    def bindings(self, pod):
        _, body = http("GET", self.api + "/_admin/requests")
        return sum(1 for r in json.loads(body) if r["method"] == "POST" and
                   r["path"] == "/api/v1/namespaces/default/pods/%s/binding" % pod)

    def test_one_leader_failover_within_the_lease_and_no_double_binding(self):
        first = self.leader(10)
        other = "b" if first == "a" else "a"
        self.assertFalse(self.ready(other))
        self.assertEqual(self.post_report(other), 503)  # a standby takes no reports
        for name, value in ((first, "1"), (other, "0")):
            metrics = http("GET", self.replicas[name][1] + "/metrics")[1]
            self.assertIn("gleaner_scheduler_leader %s\n" % value, metrics)
        self.bind_and_count(first, "p1")

        # The leader dies without a word: the standby waits out the lease, then leads.
        killed_at = time.monotonic()
        self.replicas[first][0].proc.kill()
        second = self.leader(LEASE + 5, exclude=(first,))
        took = time.monotonic() - killed_at
        self.assertEqual(second, other)
        self.assertLess(took, LEASE + 5)
        self.bind_and_count(second, "p2")
        # The new leader found p1 bound and left it; nobody bound anything twice.
        self.assertEqual(self.bindings("p1"), 1)
        self.assertEqual(self.bindings("p2"), 1)
        print("failover after SIGKILL: %.2f s (lease %.1f s)" % (took, LEASE))

    def test_a_clean_stop_hands_the_lease_over_at_once(self):
        first = self.leader(10)
        other = "b" if first == "a" else "a"
        stopped_at = time.monotonic()
        self.replicas[first][0].stop()  # SIGTERM: releases the Lease
        self.leader(LEASE + 5, exclude=(first,))
        took = time.monotonic() - stopped_at
        self.assertLess(took, LEASE, "the standby waited out the lease: %.2f s" % took)
        _, body = http("GET", self.api + "/apis/coordination.k8s.io/v1/namespaces/"
                       "gleaner-system/leases/gleaner-scheduler")
        lease = json.loads(body)
        self.assertEqual(lease["spec"]["holderIdentity"], other)
        self.assertEqual(lease["spec"]["leaseTransitions"], 1)
        print("handover after SIGTERM: %.2f s" % took)


if __name__ == "__main__":
    run_with_bin_dir(globals(), "gleaner-scheduler")
