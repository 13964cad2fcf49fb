#!/usr/bin/python3
"""The real gleaner-agent keeping its node's NodeMetric (slo.koordinator.sh/v1alpha1) on the
test API server, read back with the official python3-kubernetes client as koord-scheduler's
informer would: created when absent with the collect policy of the ack-slo-config, its
status (update time, node and system usage, usage percentiles) refreshed every
metricReportIntervalSeconds. The agent runs read-only (--no-enforce, pods from a file).

Usage: node_metric_e2e_test.py --bin-dir BUILD/bin   (exit 77: binary missing)"""

import json
import os
import sys
import tempfile
import unittest

from kubernetes import client
from kubernetes.client.rest import ApiException

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from e2e_harness import Proc, deadline_loop, run_with_bin_dir  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
APISERVER = os.path.join(HERE, "..", "apiserver", "apiserver.py")
BIN_DIR = None
GROUP, VERSION, PLURAL = "slo.koordinator.sh", "v1alpha1", "nodemetrics"


class NodeMetricE2E(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory(prefix="gleaner-nodemetric-")
        self.procs = []
        api = self.start("apiserver", ["/usr/bin/python3", APISERVER, "--port", "0"], stdin=True)
        port = int(api.wait_line(r"ready port=(\d+)", 20).group(1))
        self.api = client.ApiClient(client.Configuration(host="http://127.0.0.1:%d" % port))
        self.custom = client.CustomObjectsApi(self.api)
        client.CoreV1Api(self.api).create_node(client.V1Node(
            metadata=client.V1ObjectMeta(name="node-a"),
            status=client.V1NodeStatus(capacity={"cpu": "2", "memory": "8Gi"},
                                       allocatable={"cpu": "2", "memory": "8Gi"})))
        d = self.tmp.name
        self.kubeconfig = os.path.join(d, "kubeconfig")
        with open(self.kubeconfig, "w") as f:
            json.dump({"apiVersion": "v1", "kind": "Config", "current-context": "t",
                       "clusters": [{"name": "t", "cluster": {
                           "server": "http://127.0.0.1:%d" % port}}],
                       "users": [{"name": "t", "user": {}}],
                       "contexts": [{"name": "t", "context": {"cluster": "t", "user": "t"}}]}, f)
        self.config_dir = os.path.join(d, "slo")
        os.makedirs(self.config_dir)
        with open(os.path.join(self.config_dir, "colocation-config"), "w") as f:
            json.dump({"enable": True, "metricReportIntervalSeconds": 1,
                       "metricAggregateDurationSeconds": 60}, f)
        self.pods = os.path.join(d, "pods.json")
        with open(self.pods, "w") as f:
            json.dump({"kind": "PodList", "apiVersion": "v1", "items": []}, f)

    def tearDown(self):
        for p in reversed(self.procs):
            p.stop()
        self.api.rest_client.pool_manager.clear()
        self.api.close()
        self.tmp.cleanup()

    def start(self, name, argv, stdin=False):
        p = Proc(name, argv, self.tmp.name, stdin=stdin)
        self.procs.append(p)
        return p

    def node_metric(self):
        try:
            return self.custom.get_cluster_custom_object(GROUP, VERSION, PLURAL, "node-a")
        except ApiException as e:
            if e.status == 404:
                return None
            raise

    def test_the_agent_keeps_its_node_metric(self):
        agent = self.start("agent", [
            os.path.join(BIN_DIR, "gleaner-agent"), "run", "--node-name", "node-a",
            "--kubeconfig", self.kubeconfig, "--config-dir", self.config_dir,
            "--pods-file", self.pods, "--no-enforce", "--no-ebpf", "--state-dir", "",
            "--interval", "200", "--metrics-addr", "127.0.0.1:0"])
        first = None
        for _ in deadline_loop(30, 0.1):
            first = self.node_metric()
            # The first statuses may come before a window has samples enough for
            # percentiles (as koordlet's do).
            if first and "aggregatedNodeUsages" in (first.get("status") or {}).get(
                    "nodeMetric", {}):
                break
        self.assertTrue(first and first.get("status", {}).get("nodeMetric"), agent.text())
        self.assertEqual(first["spec"]["metricCollectPolicy"]["reportIntervalSeconds"], 1)
        self.assertEqual(first["spec"]["metricCollectPolicy"]["aggregateDurationSeconds"], 60)
        usage = first["status"]["nodeMetric"]["nodeUsage"]["resources"]
        self.assertTrue(usage["cpu"].endswith("m") and int(usage["memory"]) > 0, usage)
        self.assertIn("systemUsage", first["status"]["nodeMetric"])
        self.assertEqual(first["status"]["nodeMetric"]["aggregatedNodeUsages"][0]["duration"],
                         "5m0s")
        # Refreshed at metricReportIntervalSeconds (1 s here): a later updateTime.
        for _ in deadline_loop(15, 0.2):
            later = self.node_metric()
            if later["status"]["updateTime"] != first["status"]["updateTime"]:
                break
        self.assertNotEqual(later["status"]["updateTime"], first["status"]["updateTime"])


if __name__ == "__main__":
    run_with_bin_dir(globals(), "gleaner-agent")
