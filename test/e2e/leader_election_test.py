#!/usr/bin/python3
"""Two gleaner-scheduler replicas with --leader-elect against the test API server (which
serves coordination.k8s.io/v1 Leases): exactly one leads (/readyz 200, the other 503 and
refusing reports), the leader binds pods; killed, the standby takes over within the lease
duration and binds the next pod; stopped cleanly, it hands the Lease back at once; no pod is
ever bound twice. With the leader's renewal held by the API server longer than the lease,
the leader stops (unready, no more binds) at its renew deadline, before the standby takes
the Lease: no bind by the old leader after the new one acquired it.

Usage: leader_election_test.py --bin-dir BUILD/bin   (exit 77: binary missing)"""

import json
import os
import sys
import time
import urllib.error
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from e2e_harness import (ProcTestCase, deadline_loop, node_report,  # noqa: E402
                         run_with_bin_dir, write_kubeconfig)

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


class LeaderElection(ProcTestCase):
    def setUp(self):
        super().setUp()
        binary = os.path.join(BIN_DIR, "gleaner-scheduler")  # run_with_bin_dir saw it
        # stdin kept open: the API server takes its end as the signal to stop.
        api = self.start("apiserver", ["/usr/bin/python3", APISERVER, "--port", "0"], stdin=True)
        self.api = "http://127.0.0.1:%s" % api.wait_line(r"ready port=(\d+)", 20).group(1)
        self.assertEqual(http("POST", self.api + "/api/v1/nodes",
                              {"apiVersion": "v1", "kind": "Node",
                               "metadata": {"name": "n1"}})[0], 201)
        self.binary = binary
        self.replicas = {}
        self.seq = 0

    def start_replicas(self, lease, renew, retry):
        for name in ("a", "b"):
            # Each replica's own bearer token: the API server's request log tells them apart.
            kubeconfig = write_kubeconfig(os.path.join(self.tmp.name, "kubeconfig-" + name),
                                          self.api, "token-" + name)
            p = self.start("scheduler-" + name, [
                self.binary, "run", "--listen", "127.0.0.1:0", "--kubeconfig", kubeconfig,
                # Reports here test leadership, not identity (agent_identity_e2e does that).
                "--report-auth", "none", "--leader-elect", "--leader-elect-identity", name,
                "--tick-ms", "50", "--leader-elect-lease-duration", str(lease),
                "--leader-elect-renew-deadline", str(renew),
                "--leader-elect-retry-period", str(retry)])
            port = p.wait_line(r"listening on port (\d+)", 20).group(1)
            self.replicas[name] = (p, "http://127.0.0.1:" + port)

    def ready(self, name):
        return http("GET", self.replicas[name][1] + "/readyz")[0] == 200

    def leader(self, timeout, exclude=()):
        for _ in deadline_loop(timeout, 0.02):
            ready = [n for n in self.replicas if n not in exclude and self.ready(n)]
            if len(ready) == 1:
                return ready[0]
            self.assertLessEqual(len(ready), 1, "two replicas ready at once")
        self.fail("no leader within %.1fs" % timeout)

    def post_report(self, name, batch_cpu=4000):
        self.seq += 1
        return http("POST", self.replicas[name][1] + "/api/v1/reports",
                    node_report("n1", self.seq, "epoch-test", batch_cpu, 1 << 40,
                                capacity=(max(8000, batch_cpu), 1 << 40)))[0]

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
        self.start_replicas(LEASE, LEASE * 0.75, 0.2)
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
        self.start_replicas(LEASE, LEASE * 0.75, 0.2)
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


    def test_a_held_renewal_stops_the_leader_before_the_standby_takes_over(self):
        # client-go's proportions: lease 4 s, renew deadline 3 s, retry 0.5 s; the API server
        # holds the leader's next renewal 4.5 s, longer than the lease.
        self.start_replicas(4, 3, 0.5)
        first = self.leader(15)
        other = "b" if first == "a" else "a"
        self.assertEqual(self.post_report(first, 500000), 200)
        lease = "/apis/coordination.k8s.io/v1/namespaces/gleaner-system/leases/gleaner-scheduler"
        http("POST", self.api + "/_admin/stall?count=1&seconds=4.5&method=PUT&prefix=" + lease)
        # Pods keep coming, so whichever replica leads keeps binding; reports go to both
        # (a standby refuses them), as agents' reports reach whichever replica is ready.
        created, both_ready, took_over = 0, 0, None
        for _ in deadline_loop(20, 0.1):
            self.assertEqual(http("POST", self.api + "/api/v1/namespaces/default/pods",
                                  driver("p%d" % created))[0], 201)
            created += 1
            for name in self.replicas:
                self.post_report(name, 500000)
            if self.ready(first) and self.ready(other):
                both_ready += 1
            if took_over is None and self.ready(other):
                took_over = created
            if took_over is not None and created >= took_over + 10:
                break
        self.assertIsNotNone(took_over, "the standby never led")
        self.assertEqual(both_ready, 0, "both replicas ready at once")
        _, body = http("GET", self.api + "/_admin/requests")
        log = json.loads(body)
        acquired = next(i for i, r in enumerate(log)
                        if r["method"] == "PUT" and r["path"] == lease and
                        r.get("token") == "token-" + other and r.get("code") == 200)
        late = [r for r in log[acquired:] if r.get("token") == "token-" + first and
                r["method"] == "POST" and r["path"].endswith("/binding")]
        self.assertEqual(late, [], "the old leader bound pods after the new one took the Lease")
        bound_by = {n: sum(1 for r in log if r.get("token") == "token-" + n and
                           r["method"] == "POST" and r["path"].endswith("/binding"))
                    for n in self.replicas}
        self.assertGreater(bound_by[first], 0)
        self.assertGreater(bound_by[other], 0, "the new leader never bound")
        print("held renewal: old leader %d binds, new leader %d, none after the takeover"
              % (bound_by[first], bound_by[other]))


if __name__ == "__main__":
    run_with_bin_dir(globals(), "gleaner-scheduler")
