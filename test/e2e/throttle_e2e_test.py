#!/usr/bin/python3
"""gleaner-scheduler through an API server that throttles it: for 40 s every request is
refused as kube-apiserver's priority-and-fairness filter refuses it (429, "Retry-After: 1",
test/apiserver/apiserver.py's send_throttled), its watches dropped at the start so it must
list and watch again through the storm. Once the server answers again, a new pod is bound
within 8 s: the scheduler came back after the server's wait, not after a back-off grown
through the storm.

Usage: throttle_e2e_test.py --bin-dir BUILD/bin   (exit 77: binary missing)"""

import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from e2e_harness import (ProcTestCase, deadline_loop, node_report,  # noqa: E402
                         run_with_bin_dir, write_kubeconfig)
from leader_election_test import driver, http  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
APISERVER = os.path.join(HERE, "..", "apiserver", "apiserver.py")
BIN_DIR = None
# Long enough that a back-off doubling from 0.5 s (+-20%) would sleep past the storm's end by
# more than RECOVERY whatever its jitter: its 7th try falls in [25, 38] s, the next after
# another 24 to 30 s.
STORM = 40.0
RECOVERY = 8.0


class Throttled(ProcTestCase):
    def setUp(self):
        super().setUp()
        api = self.start("apiserver", ["/usr/bin/python3", APISERVER, "--port", "0"], stdin=True)
        self.api = "http://127.0.0.1:%s" % api.wait_line(r"ready port=(\d+)", 20).group(1)
        kubeconfig = write_kubeconfig(os.path.join(self.tmp.name, "kubeconfig"), self.api)
        self.assertEqual(http("POST", self.api + "/api/v1/nodes",
                              {"apiVersion": "v1", "kind": "Node",
                               "metadata": {"name": "n1"}})[0], 201)
        p = self.start("scheduler", [
            os.path.join(BIN_DIR, "gleaner-scheduler"), "run", "--listen", "127.0.0.1:0",
            "--kubeconfig", kubeconfig, "--report-auth", "none", "--tick-ms", "50"])
        self.url = "http://127.0.0.1:" + p.wait_line(r"listening on port (\d+)", 20).group(1)
        self.seq = 0

    def report(self):
        self.seq += 1
        return http("POST", self.url + "/api/v1/reports",
                    node_report("n1", self.seq, "epoch-throttle", 8000, 16 << 30))[0]

    def bound_within(self, pod, timeout):
        for _ in deadline_loop(timeout, 0.1):
            self.report()  # the agent keeps reporting: the node stays fresh
            status, body = http("GET", self.api + "/api/v1/namespaces/default/pods/" + pod)
            if status == 200 and json.loads(body)["spec"].get("nodeName"):
                return True
        return False

    def test_a_new_pod_is_bound_soon_after_a_throttling_storm(self):
        self.assertEqual(self.report(), 200)
        self.assertEqual(http("POST", self.api + "/api/v1/namespaces/default/pods",
                              driver("before"))[0], 201)
        self.assertTrue(self.bound_within("before", 15), "no bind before the storm")

        # The storm: every request refused until it ends; the scheduler's watches dropped,
        # so its informers list and watch again into it.
        http("POST", self.api + "/_admin/throttle?count=-1&retry-after=1")
        http("POST", self.api + "/_admin/drop-watches")
        for _ in deadline_loop(STORM, 0.5):
            self.report()
        http("POST", self.api + "/_admin/throttle?count=0")
        ended = time.monotonic()
        _, body = http("GET", self.api + "/_admin/requests")
        refused = sum(1 for r in json.loads(body) if r.get("code") == 429)
        self.assertGreater(refused, 50, "the scheduler did not meet the storm")

        self.assertEqual(http("POST", self.api + "/api/v1/namespaces/default/pods",
                              driver("after"))[0], 201)
        self.assertTrue(self.bound_within("after", RECOVERY),
                        "a pod created after the storm was not bound within %.0f s" % RECOVERY)
        print("%d requests refused over %.0f s; the next pod bound %.2f s after the storm"
              % (refused, STORM, time.monotonic() - ended))


if __name__ == "__main__":
    run_with_bin_dir(globals(), "gleaner-scheduler")
