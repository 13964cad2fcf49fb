#!/usr/bin/python3
"""End to end on a node that runs pods for real: gleaner-agent in its production mode.

    test API server (test/apiserver/apiserver.py)
    + gleaner-scheduler run (the shipped Deployment's flags: colocation webhook, agent
      reports over HTTPS checked by TokenReview, batch resources written on the Node)
    + spark-operator / Spark 3.5 / kubelet emulator (test/spark/spark_emulator.py) with one
      real node, n1: kubelet's cgroup v1 layout in a scratch hierarchy, real processes
    + gleaner-agent run with the shipped DaemonSet's flags: pods from the emulated kubelet's
      /pods over HTTPS with the pod's ServiceAccount token, the Node and NodeMetric through
      a kubeconfig, reports over HTTPS with its projected token, enforcement on the real
      cgroups of the scratch hierarchy.

The agent runs as in its pod: in a mount namespace of its own where the ServiceAccount
volume (token and CA) and the report token are mounted where the DaemonSet mounts them,
and /etc/hosts resolves the scheduler's Service name to the scheduler's address (the
cluster DNS and Service of a real cluster).

An LS service (a Burstable pod serving HTTP) and a SparkApplication whose executor the
colocation webhook makes a BE pod (koordinator.sh/qosClass BE, batch resources only,
BestEffort) share the node. The test drives the LS service's load and shows: the agent
lists both pods from kubelet; the executor's cgroup gets the agent's BE settings; the BE
quota falls when LS CPU rises and the executor's CPU use stays under it; the batch CPU the
agent reports reaches the Node through the scheduler, falls under LS load and comes back
after it, and the Spark application placed on that batch room keeps running across the
shrink (a shrink never deletes a running pod); the NodeMetric is written; after the agent stops every value it changed is
kubelet's again; after the test no cgroup or process is left.

Root only (real cgroups; exit 77, skipped, otherwise). Usage:
  agent_real_node_e2e_test.py --bin-dir BUILD/bin   (exit 77: binary missing)
GLEANER_E2E_KEEP_LOGS=1 prints every process's log; GLEANER_E2E_VERBOSE=1 the progress."""

import json
import os
import shutil
import signal
import sys
import tempfile
import time
import unittest

from kubernetes import client

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "spark"))
import scratch_cgroups  # noqa: E402
from colocation_harness import (APISERVER, BATCH_CPU, BATCH_MEMORY, EMULATOR,  # noqa: E402
                                EXAMPLES, PYTHON, SCRIPT, SPARK)
from e2e_harness import (find_doc, load_yaml, make_certificates,  # noqa: E402
                         run_with_bin_dir)
from real_node_harness import LS_NS, LS_POD, NODE, RealNodeHarness, free_port  # noqa: E402

BIN_DIR = None


class AgentRealNodeE2E(RealNodeHarness, unittest.TestCase):
    scheduler_binary = property(lambda self: os.path.join(BIN_DIR, "gleaner-scheduler"))
    bin_dir = property(lambda self: BIN_DIR)

    def setUp(self):
        reason = scratch_cgroups.skip_reason()
        if reason:
            raise unittest.SkipTest(reason)
        if not shutil.which("unshare"):
            raise unittest.SkipTest("no unshare(1) to give the agent its pod's mounts")
        self.t0 = time.monotonic()
        self.tmp = tempfile.mkdtemp(prefix="gleaner-real-node-")
        self.addCleanup(shutil.rmtree, self.tmp, True)
        self.scratch = scratch_cgroups.ScratchCgroups()
        self.addCleanup(self.scratch.remove)
        self.procs = []
        self.recorder = None
        self.addCleanup(self.stop_all)  # before the scratch goes: its processes first

        api = self.start("apiserver", [PYTHON, APISERVER, "--port", "0",
                                       "--bookmark-interval", "0.5"], stdin=True)
        self.server = "http://127.0.0.1:" + api.wait_line(r"ready port=(\d+)", 15).group(1)
        self.api_client = client.ApiClient(client.Configuration(host=self.server))
        self.custom = client.CustomObjectsApi(self.api_client)
        self.apply_base_manifests()

        # The node as its kubelet registers it: this machine's CPUs and memory.
        cpus = os.cpu_count()
        with open("/proc/meminfo") as f:
            mem_kib = int(next(line for line in f if line.startswith("MemTotal:")).split()[1])
        amounts = {"cpu": str(cpus), "memory": "%dKi" % mem_kib, "pods": "110"}
        self.create({"apiVersion": "v1", "kind": "Node", "metadata": {
            "name": NODE, "labels": {"kubernetes.io/hostname": NODE}}})
        self.call("PATCH", "/api/v1/nodes/%s/status" % NODE, body={"status": {
            "capacity": amounts, "allocatable": amounts,
            "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady"}]}},
            content_type="application/merge-patch+json")

        # The LS service: Burstable, placed on n1 (as kube-scheduler would bind it).
        self.ls_port = free_port()
        self.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": LS_NS}})
        self.create({"apiVersion": "v1", "kind": "Pod", "metadata": {
            "name": LS_POD, "namespace": LS_NS, "labels": {"app": "web"}},
            "spec": {"nodeName": NODE, "priorityClassName": "koord-prod",
                     "terminationGracePeriodSeconds": 2,
                     "containers": [{"name": "web", "image": "nginx:1.27",
                                     "ports": [{"containerPort": 8080,
                                                "hostPort": self.ls_port}],
                                     "resources": {
                                         "requests": {"cpu": "500m", "memory": "256Mi"},
                                         "limits": {"memory": "256Mi"}}}]}})

        self.start_scheduler()
        self.report_token = self.agent_token(NODE)
        self.kubelet_token = self.service_account_token(NODE)

        # The real node's kubelet: HTTPS with a serving certificate for "localhost" (its
        # address as the agent dials it), accepting the agent's ServiceAccount token.
        self.kubelet_ca, tls = make_certificates(self.tmp)
        self.emulator = self.start("emulator", [
            PYTHON, EMULATOR, "--server", self.server, "--nodes", NODE, "--real-nodes", NODE,
            "--cgroup-root", self.scratch.root, "--kubelet-port", "0",
            "--kubelet-tls-cert", os.path.join(tls, "tls.crt"),
            "--kubelet-tls-key", os.path.join(tls, "tls.key"),
            "--kubelet-token", self.kubelet_token, "--exit-on-stdin-eof", "--verbose"],
            stdin=True, dump_signal=signal.SIGUSR1)
        self.kubelet_port = int(self.emulator.wait_line(
            r"kubelet node=%s port=(\d+)" % NODE, 20).group(1))
        self.emulator.wait_line(r"^ready$", 20)
        self.ls = self.wait_for("the LS pod running", lambda: (
            lambda p: p if p and p["status"].get("phase") == "Running" else None)(
            self.pod(LS_NS, LS_POD)), 20)
        self.wait_for("the LS service answering", self.ls_answers, 20)
        self.log("cluster up")

    # --- the agent ---------------------------------------------------------------------------

    # --- the tests ---------------------------------------------------------------------------
    def test_be_executor_is_held_under_ls_load_and_restored(self):
        found = self.found_values()
        # The agent's own reports drive the node's batch room throughout (usage averaged
        # over 5 s, so it follows the LS load within seconds): the LS surge below shrinks
        # it, and the scheduler must not take the running job off the node for that.
        agent = self.start_agent(metricAggregateDurationSeconds=5)
        agent.wait_line(r"pods from kubelet localhost", 20)
        # The agent lists the LS pod from kubelet's /pods: its name, which the cgroup tree
        # alone would not give it.
        self.wait_for("the agent's series of the LS pod", lambda: (
            LS_NS, LS_POD) in self.agent_pods(), 20)
        idle_batch = self.wait_for("700m of batch-cpu on the Node", lambda: (
            lambda b: b if b is not None and b >= 700 else None)(self.batch_cpu()), 60)

        # A Spark job: its executor is made a BE pod by the colocation webhook and placed
        # on the batch room the agent reports.
        docs = load_yaml(os.path.join(EXAMPLES, "spark-application.yaml"))
        ns_obj, app = find_doc(docs, "Namespace"), find_doc(docs, "SparkApplication")
        ns, name = app["metadata"]["namespace"], app["metadata"]["name"]
        # One executor doing real CPU work (tasks of 0.5 s, back to back) on up to one core
        # (its coreLimit, which the webhook makes its batch-cpu limit and the agent its CFS
        # quota), requesting up to that core as the batch room allows (a machine busy with
        # other work lends less): the job holds more batch-cpu than the LS surge leaves.
        exec_milli = min(1000, (idle_batch - 200) // 100 * 100)
        app["spec"]["driver"].update(coreRequest="100m", memory="256m", memoryOverhead="128m")
        app["spec"]["executor"].update(instances=1, cores=1, coreRequest="%dm" % exec_milli, coreLimit="1",
                                       memory="256m", memoryOverhead="128m")
        app["spec"].setdefault("sparkConf", {}).update({
            "spark.kubernetes.allocation.batch.delay": "100ms",
            "spark.kubernetes.executor.eventProcessingInterval": "100ms"})
        app["metadata"].setdefault("annotations", {})[SCRIPT + "task-seconds"] = "0.5"
        self.create(ns_obj)
        self.probe_webhook(ns)
        self.create(app)
        executor = self.wait_for("the executor running on " + NODE, lambda: (
            lambda ps: ps[0] if len(ps) == 1 and ps[0]["status"].get("phase") == "Running"
            else None)(self.pods(ns, "spark-role=executor")), 60)
        self.assertEqual(executor["spec"]["nodeName"], NODE)
        self.assertEqual(executor["metadata"]["labels"].get("koordinator.sh/qosClass"), "BE")
        self.assertEqual(executor["status"]["qosClass"], "BestEffort")
        main = next(c for c in executor["spec"]["containers"]
                    if c["name"] == "spark-kubernetes-executor")
        batch_request = int(main["resources"]["requests"][BATCH_CPU])
        self.assertEqual(batch_request, exec_milli)
        held = batch_request + 100  # and the driver's
        exec_dir, exec_containers = self.pod_dirs(executor, "kubepods/besteffort")
        exec_main = exec_containers["spark-kubernetes-executor"]
        self.wait_for("the agent's series of the executor, class BE", lambda: self.agent_pods(
        ).get((ns, executor["metadata"]["name"])) == "BE", 20)

        # The agent's BE settings on the executor's real cgroups: cpu.shares from its
        # batch-cpu request (kubelet gave the BestEffort pod 2), memory limit from its
        # batch-memory limit. On its container's cgroup too, which kubelet names in /pods a
        # moment after the pod: within a few passes, not at the next 10 s re-list.
        shares = str(batch_request * 1024 // 1000)
        memory_limit = int(main["resources"]["limits"][BATCH_MEMORY])
        self.wait_for("BE cpu.shares %s and the batch-memory limit on the executor's pod and "
                      "container cgroups" % shares, lambda: all(
                          self.cg(d, "cpu.shares") == shares and int(self.cg(
                              d, "memory.limit_in_bytes", "memory")) == memory_limit
                          for d in (exec_dir, exec_main)), 5)
        start = int(self.cg(exec_dir, "cpuacct.usage", "cpuacct"))
        self.wait_for("0.3 s of CPU used by the executor", lambda: int(self.cg(
            exec_dir, "cpuacct.usage", "cpuacct")) - start >= 300_000_000, 30)

        # The BE tier's limit with LS quiet, then under LS load: the limit must come down
        # (LS takes what BE had) and the executor's CPU use stays under it.
        # (A machine busy with other work leaves BE little to lose: wait for half a core.)
        idle_limit = self.wait_for("a BE quota of half a core or more", lambda: (
            lambda lim: lim if lim is not None and lim >= 0.5 else None)(
            self.be_limit_cores()), 120)
        load = self.start_load()
        # The batch room shrinks under the surge below what the job holds; the job keeps
        # running on the node.
        shrunk = self.wait_for("the Node's batch-cpu below the job's %dm under LS load" % held,
                               lambda: (lambda b: b if b is not None and b < held else None)(
                                   self.batch_cpu()), 40)
        limit = self.wait_for("the BE quota down by 0.3 cores, below the executor's core",
                              lambda: (lambda lim: lim if lim is not None and lim <= min(
                                  idle_limit - 0.3, 0.9) else None)(self.be_limit_cores()), 30)
        rate = self.cpu_rate(exec_dir)
        highest = max(limit, self.be_limit_cores() or 0)
        self.log("BE limit %.2f cores with LS quiet, %.2f under LS load; the executor used "
                 "%.2f" % (idle_limit, highest, rate))
        # CFS holds a group to its quota each period; 0.05 cores for the window's edges.
        self.assertLessEqual(rate, highest + 0.05, "the executor runs over the BE quota")
        load.stop()
        grown = self.wait_for("the Node's batch-cpu back after the load", lambda: (
            lambda b: b if b is not None and b >= shrunk + 300 else None)(self.batch_cpu()), 40)
        self.log("batch-cpu %dm before the surge, %dm under it, %dm after; the job holds "
                 "%dm" % (idle_batch, shrunk, grown, held))

        # Across the surge and the shrink: the same executor and driver, still running,
        # and the scheduler never reclaimed the job.
        driver = self.pod(ns, name + "-driver")
        self.assertEqual(driver["status"].get("phase"), "Running", driver["status"])
        executors = self.pods(ns, "spark-role=executor")
        self.assertEqual([p["metadata"]["uid"] for p in executors],
                         [executor["metadata"]["uid"]], "the executor was deleted or replaced")
        self.assertEqual(executors[0]["status"].get("phase"), "Running")
        self.assertEqual(self.job(ns, name)["reschedules"], 0)
        self.stop_agent_and_check(found, [(executor, "kubepods/besteffort"),
                                          (driver, "kubepods/besteffort")])
        self.custom.delete_namespaced_custom_object(*SPARK[:2], ns, SPARK[2], name)
        self.stop_node_and_check()

    def test_batch_cpu_follows_ls_load(self):
        found = self.found_values()
        # Usage averaged over 5 s: the batch room follows the LS load within seconds.
        agent = self.start_agent(metricAggregateDurationSeconds=5)
        agent.wait_line(r"pods from kubelet localhost", 20)
        # koordlet's NodeMetric, written on the API server.
        metric = self.wait_for("the NodeMetric's status", lambda: (
            self.custom.get_cluster_custom_object("slo.koordinator.sh", "v1alpha1",
                                                  "nodemetrics", NODE).get("status") or {}
        ).get("nodeMetric"), 20)
        self.assertTrue(metric["nodeUsage"]["resources"]["cpu"].endswith("m"), metric)
        # The batch room the agent reports over TLS, written on the Node by the scheduler:
        # with LS quiet, most of the node (what the machine's other work leaves).
        idle = self.wait_for("700m of batch-cpu on the Node", lambda: (
            lambda b: b if b is not None and b >= 700 else None)(self.batch_cpu()), 60)
        load = self.start_load()
        loaded = self.wait_for("the Node's batch-cpu down by 400m under LS load", lambda: (
            lambda b: b if b is not None and b <= idle - 400 else None)(self.batch_cpu()), 40)
        load.stop()
        after = self.wait_for("the Node's batch-cpu back after the load", lambda: (
            lambda b: b if b is not None and b >= loaded + 300 else None)(self.batch_cpu()), 40)
        self.log("batch-cpu %dm with LS quiet, %dm under LS load, %dm after" % (
            idle, loaded, after))
        node = next(n for n in self.sched("/api/v1/nodes")["nodes"] if n["name"] == NODE)
        self.assertEqual(node["health"], "fresh", node)
        self.stop_agent_and_check(found)
        self.stop_node_and_check()


if __name__ == "__main__":
    if scratch_cgroups.skip_reason():
        print("SKIP: " + scratch_cgroups.skip_reason())
        sys.exit(77)
    run_with_bin_dir(globals(), "gleaner-agent", "gleaner-scheduler")
