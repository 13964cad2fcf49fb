#!/usr/bin/python3
"""End to end: a SparkApplication on batch capacity, through the whole chain, with the
shipped manifests.

    test API server (test/apiserver/apiserver.py, mutating admission like kube-apiserver)
    + gleaner-scheduler run (live scheduler, colocation webhook, --kubeconfig)
    + spark-operator / Spark 3.5 / kubelet emulator (test/spark/spark_emulator.py)

Two nodes whose regular allocatable cpu is nearly full of latency-sensitive (LS) pods'
requests; node reports (as gleaner-agent would post them) give each node batch capacity,
which gleaner-scheduler publishes as kubernetes.io/batch-cpu / batch-memory on the Node.

test_colocated_application_runs_on_batch_capacity (the issue's "Done when"):
  1. the operator creates the driver, the webhook makes it a BestEffort pod asking only
     for batch resources (koordinator.sh/qosClass=BE), gleaner-scheduler binds it and the
     kubelet runs it although regular cpu is full;
  2. the driver's executors are mutated the same way, bound by the gang scheduler, run;
  3. an executor fails mid-run: Spark deletes and replaces it; the driver is untouched,
     the scheduler's job stays admitted, the replacement is bound into the kept room;
  4. the application completes: executors deleted, driver Succeeded, app COMPLETED, the
     scheduler's job Completed and every node's batch room free again.
test_unlabelled_namespace_pods_stay_burstable: the same application in a namespace
  without gleaner.io/colocation=enabled (see the test for what happens and why).

Objects come from deploy/manifests (Namespace, PriorityClasses, the webhook's Service and
MutatingWebhookConfiguration, the scheduler's flags from its Deployment) and
deploy/examples (Namespace + SparkApplication, ClusterColocationProfile); the
SparkApplication is changed only where the test must (each change says why).

Usage (ctest passes the build's bin directory):
  spark_colocation_e2e_test.py [--bin-dir BUILD/bin | --scheduler PATH] [unittest args]
  (or GLEANER_SCHEDULER=PATH / GLEANER_BIN_DIR=DIR in the environment; default
  build/bin/gleaner-scheduler of this checkout). Skipped, exit code 77, when the
  binary is missing. The processes' logs are printed when a test fails;
  GLEANER_E2E_KEEP_LOGS=1 prints them always, GLEANER_E2E_VERBOSE=1 prints progress.
"""

import json
import os
import re
import shutil
import signal
import sys
import tempfile
import time
import unittest

from kubernetes import client
from kubernetes.client.rest import ApiException

from colocation_harness import (APISERVER, BATCH, BATCH_CPU, BATCH_MEMORY, EMULATOR, EXAMPLES, GI,
                                LS_CPU_MILLI, LS_MEMORY, MANIFESTS, NODE_CPU_MILLI,
                                NODE_MEMORY, NODES, PYTHON, REPO, SCRIPT, ColocationHarness)
from e2e_harness import PodRecorder, cpu_milli, find_doc, load_yaml

SCHEDULER = os.environ.get("GLEANER_SCHEDULER") or os.path.join(
    os.environ.get("GLEANER_BIN_DIR") or os.path.join(REPO, "build", "bin"), "gleaner-scheduler")


class ColocationE2E(ColocationHarness, unittest.TestCase):
    # The module's SCHEDULER, read when a test runs (main() sets it from --bin-dir).
    scheduler_binary = property(lambda self: SCHEDULER)

    # --- the cluster -------------------------------------------------------------------
    def setUp(self):
        if not os.access(SCHEDULER, os.X_OK):
            raise unittest.SkipTest("no gleaner-scheduler binary at %s (build it, or pass "
                                    "--bin-dir / set GLEANER_SCHEDULER)" % SCHEDULER)
        self.t0 = time.monotonic()
        self.tmp = tempfile.mkdtemp(prefix="gleaner-e2e-")
        self.addCleanup(shutil.rmtree, self.tmp, True)
        self.procs = []
        self.recorder = None
        self.addCleanup(self.stop_all)  # runs even when setUp fails half-way

        api = self.start("apiserver", [PYTHON, APISERVER, "--port", "0",
                                       "--bookmark-interval", "0.5"], stdin=True)
        port = api.wait_line(r"ready port=(\d+)", 15).group(1)
        self.server = "http://127.0.0.1:" + port
        self.api_client = client.ApiClient(client.Configuration(host=self.server))
        self.core = client.CoreV1Api(self.api_client)
        self.custom = client.CustomObjectsApi(self.api_client)

        self.apply_base_manifests()

        # Two nodes, each with an LS service whose requests nearly fill regular cpu.
        self.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "services"}})
        for node in NODES:
            self.create({"apiVersion": "v1", "kind": "Node",
                         "metadata": {"name": node, "labels": {"kubernetes.io/hostname": node}}})
            amounts = {"cpu": str(NODE_CPU_MILLI // 1000), "memory": "%dGi" % (NODE_MEMORY // GI),
                       "pods": "110"}
            ls_memory = "%dGi" % (LS_MEMORY // GI)
            self.core.patch_node_status(node, {"status": {
                "capacity": amounts, "allocatable": amounts,
                "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady"}]}})
            self.create({"apiVersion": "v1", "kind": "Pod",
                         "metadata": {"name": "web-" + node, "namespace": "services",
                                      "labels": {"app": "web"}},
                         "spec": {"nodeName": node, "priorityClassName": "koord-prod",
                                  "containers": [{"name": "web", "image": "nginx:1.27",
                                                  "resources": {
                                                      "requests": {"cpu": "%dm" % LS_CPU_MILLI,
                                                                   "memory": ls_memory},
                                                      "limits": {"memory": ls_memory}}}]}})

        self.start_scheduler()
        # The kubelets of both nodes, the Spark operator and Spark itself.
        self.emulator = self.start("emulator", [PYTHON, EMULATOR, "--server", self.server,
                                                "--nodes", ",".join(NODES),
                                                "--exit-on-stdin-eof", "--verbose"], stdin=True,
                                   dump_signal=signal.SIGUSR1)
        self.post_node_reports()
        self.emulator.wait_line(r"^ready$", 20)
        self.recorder = PodRecorder(self.core)
        self.recorder.start()
        # The scheduler published the reported batch capacity on both Nodes: that, not
        # regular allocatable, is what the kubelet admits batch pods against.
        for node in NODES:
            self.wait_for("batch resources published on Node " + node, lambda: (
                self.node(node)["status"]["allocatable"].get(BATCH_CPU) ==
                str(BATCH["cpuMillicores"]) and
                self.node(node)["status"]["allocatable"].get(BATCH_MEMORY) ==
                str(BATCH["memoryBytes"])), 10)
            self.wait_for("LS pod on %s running" % node, lambda: self.pod(
                "services", "web-" + node)["status"].get("phase") == "Running", 10)
        self.log("cluster up")

    def example_app(self, namespace=None):
        """deploy/examples/spark-application.yaml's Namespace and SparkApplication, with
        the changes the test needs (and only those)."""
        docs = load_yaml(os.path.join(EXAMPLES, "spark-application.yaml"))
        ns, app = find_doc(docs, "Namespace"), find_doc(docs, "SparkApplication")
        if namespace is not None:
            # The second test: the same application in a namespace without the label.
            ns = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}}
            app["metadata"]["namespace"] = namespace
        # Spark's timings, made fast so the test takes seconds (defaults: 1s batch delay,
        # 1s executor event processing); Spark's behaviour is otherwise unchanged.
        app["spec"].setdefault("sparkConf", {}).update({
            "spark.kubernetes.allocation.batch.delay": "100ms",
            "spark.kubernetes.executor.eventProcessingInterval": "100ms"})
        # The emulator's script (its stand-in for SparkPi's work): the job runs 6 s once
        # every executor runs; a fixed seed makes pod names repeat run to run.
        app["metadata"].setdefault("annotations", {}).update({
            SCRIPT + "run-seconds": "6", SCRIPT + "run-from": "all-executors",
            SCRIPT + "seed": "42"})
        # The executors are left as shipped (4 x 2 cores, 3g + 1g overhead): with the
        # driver, 9 cpu / 18Gi, which the two nodes' 2 x (5 cpu, 16Gi) batch capacity fits.
        # image and mainApplicationFile are set in the example: nothing to add.
        return ns, app

    # --- the tests --------------------------------------------------------------------------
    def test_colocated_application_runs_on_batch_capacity(self):
        ns_obj, app = self.example_app()
        ns, name = app["metadata"]["namespace"], app["metadata"]["name"]
        self.assertEqual(ns_obj["metadata"]["labels"].get("gleaner.io/colocation"), "enabled")
        # Executor 2 exits with code 1 1.5 s after it starts running (an executor lost
        # mid-run; the emulator's script).
        app["metadata"]["annotations"][SCRIPT + "fail-executors"] = "2@1.5"
        self.create(ns_obj)
        self.probe_webhook(ns)
        self.create(app)
        driver_name = name + "-driver"

        # 1. The driver: mutated on create, bound by gleaner-scheduler, run by the kubelet.
        driver = self.wait_for("the driver running", lambda: (
            lambda p: p if p and p["status"].get("phase") == "Running" else None)(
            self.pod(ns, driver_name)), 15)
        self.log("driver running on " + driver["spec"]["nodeName"])
        self.assert_batch_pod(driver, cpu_milli=1000, memory=2 * GI)
        driver_uid, driver_node = driver["metadata"]["uid"], driver["spec"]["nodeName"]
        self.assertIn(driver_node, NODES)
        # Bound through pods/binding (PodScheduled) by gleaner-scheduler: nothing else binds.
        self.assertTrue(any(c["type"] == "PodScheduled" and c["status"] == "True"
                            for c in driver["status"]["conditions"]))
        # Regular cpu on its node is full: as the Burstable pod Spark made (its 1 cpu
        # request, which the webhook recorded in Koordinator's annotation) the kubelet would
        # have refused it. It was admitted on the batch resources the scheduler published.
        original = json.loads(driver["metadata"]["annotations"][
            "node.koordinator.sh/extended-resource-spec"])["containers"]
        spark_cpu = cpu_milli(original["spark-kubernetes-driver"]["requests"]["cpu"])
        self.assertEqual(spark_cpu, 1000)
        regular_used = sum(cpu_milli(c["resources"].get("requests", {}).get("cpu", "0"))
                           for p in self.call("GET", "/api/v1/pods", query={
                               "fieldSelector": "spec.nodeName=" + driver_node})["items"]
                           if p["status"].get("phase") == "Running"
                           for c in p["spec"]["containers"])
        allocatable = self.node(driver_node)["status"]["allocatable"]
        self.assertEqual(regular_used, LS_CPU_MILLI)  # the LS pod's; batch pods ask for none
        self.assertGreater(regular_used + spark_cpu, cpu_milli(allocatable["cpu"]))
        self.assertEqual(allocatable[BATCH_CPU], str(BATCH["cpuMillicores"]))
        # The API server called the webhook of the shipped configuration for the driver's
        # create (not a dry run) and applied its patch.
        calls = self.admin("GET", "webhook-calls")["calls"]
        self.assertIn((self.webhook_config["metadata"]["name"],
                       self.webhook_config["webhooks"][0]["name"], "patched"),
                      [(c["configuration"], c["webhook"], c["outcome"]) for c in calls
                       if c["namespace"] == ns and c["name"] == driver_name and
                       not c["dryRun"]])

        # 2. The executors: made by the driver, mutated, bound as the gang's, running.
        executors = self.wait_for("4 executors running", lambda: (
            lambda ps: ps if len(ps) == 4 and all(
                p["status"].get("phase") == "Running" for p in ps) else None)(
            self.pods(ns, "spark-role=executor")), 15)
        self.log("executors running")
        ids = sorted(int(p["metadata"]["labels"]["spark-exec-id"]) for p in executors)
        self.assertEqual(ids, [1, 2, 3, 4])
        exec_nodes = {}
        for p in executors:
            self.assert_batch_pod(p, cpu_milli=2000, memory=4 * GI)
            exec_nodes[int(p["metadata"]["labels"]["spark-exec-id"])] = p["spec"]["nodeName"]
        # The gang spans both nodes: 5 cpu each cannot hold the driver and 4 x 2 cpu.
        self.assertEqual(set(exec_nodes.values()), set(NODES))
        job = self.wait_for("the scheduler's job Running", lambda: (
            lambda j: j if j and j["phase"] == "Running" else None)(self.job(ns, name)), 10)
        self.assertEqual(job["executors"], 4)
        self.assertEqual(job["driver"], {"cpuMillicores": 1000, "memoryBytes": 2 * GI})
        self.assertEqual(job["executor"], {"cpuMillicores": 2000, "memoryBytes": 4 * GI})
        cluster = self.scheduler_args.get("--cluster-name", "default")
        self.assertEqual(job["pods"][0]["node"], cluster + "/" + driver_node)

        # 3. Executor 2 fails: Spark deletes it and asks for executor 5, which the
        # scheduler binds into the room the job kept on the same node.
        def history(exec_id):
            return [(t, p) for t, p in self.recorder.seen(ns, lambda t, p: (
                p["metadata"].get("labels") or {}).get("spark-exec-id") == str(exec_id))]

        self.wait_for("executor 2 Failed then deleted", lambda: (
            any(t == "DELETED" for t, _ in history(2)) and
            any(p["status"].get("phase") == "Failed" for _, p in history(2))), 15)
        self.log("executor 2 failed and deleted")
        failed = [p for t, p in history(2) if p["status"].get("phase") == "Failed"][-1]
        self.assertEqual(failed["status"]["containerStatuses"][0]["state"]["terminated"]
                         ["exitCode"], 1)
        replacement = self.wait_for("executor 5 running", lambda: (
            lambda ps: ps[0] if ps and ps[0]["status"].get("phase") == "Running" else None)(
            self.pods(ns, "spark-role=executor,spark-exec-id=5")), 10)
        self.log("executor 5 running")
        # While the application still runs (run-seconds keeps it going a few seconds):
        self.assertEqual(self.app_state(ns, name), "RUNNING")
        self.assertEqual(replacement["spec"]["nodeName"], exec_nodes[2])
        self.assert_batch_pod(replacement, cpu_milli=2000, memory=4 * GI)
        driver_now = self.pod(ns, driver_name)
        self.assertEqual(driver_now["metadata"]["uid"], driver_uid)
        self.assertEqual(driver_now["status"]["phase"], "Running")
        self.assertEqual(driver_now["spec"]["nodeName"], driver_node)
        job = self.job(ns, name)
        # Admitted or Running (every pod ran before the loss), never Withdrawn or
        # Pending: the job keeps its placement through Spark's own executor churn.
        self.assertIn(job["phase"], ("Admitted", "Running"), job)
        self.assertEqual(job["reschedules"], 0)
        self.assertEqual(job["preemptions"], 0)
        self.assertEqual(sorted(p["node"] for p in job["pods"][1:]),
                         sorted(cluster + "/" + n for n in exec_nodes.values()))
        self.assertTrue(all(p["bound"] for p in job["pods"]), job)
        # The lost executor's room stayed with the job and the replacement took it: the
        # nodes hold exactly the gang (9 cpu / 18Gi), nothing more, nothing released.
        used = [n["used"] for n in self.sched("/api/v1/nodes")["nodes"]]
        self.assertEqual((sum(u["cpuMillicores"] for u in used),
                          sum(u["memoryBytes"] for u in used)), (9000, 18 * GI))
        # The driver pod was never touched: one uid, never deleted, Pending then Running.
        driver_events = self.recorder.seen(ns, lambda t, p: p["metadata"]["name"] == driver_name)
        self.assertEqual({p["metadata"]["uid"] for _, p in driver_events}, {driver_uid})
        self.assertNotIn("DELETED", [t for t, _ in driver_events])
        self.assertEqual({p["status"].get("phase") for _, p in driver_events},
                         {"Pending", "Running"})
        self.wait_for("a GleanerExecutorGone event on the driver", lambda: any(
            e["reason"] == "GleanerExecutorGone" for e in self.events(ns, driver_name)), 5)
        # Once the replacement runs, every pod of the job runs again ("Running").
        self.wait_for("/api/v1/jobs shows the replacement executor running", lambda: (
            lambda j: j["phase"] == "Running" and all(p["running"] for p in j["pods"]))(
            self.job(ns, name)), 5)

        # 4. The end: Spark deletes every executor, the driver exits 0.
        self.wait_for("the application COMPLETED",
                      lambda: self.app_state(ns, name) == "COMPLETED", 20)
        self.log("application completed")
        self.assertEqual(self.pod(ns, driver_name)["metadata"]["uid"], driver_uid)
        self.assertEqual(self.pod(ns, driver_name)["status"]["phase"], "Succeeded")
        self.wait_for("every executor deleted",
                      lambda: self.pods(ns, "spark-role=executor") == [], 10)
        self.wait_for("the deletions of executors 1-5 seen", lambda: {
            int(p["metadata"]["labels"]["spark-exec-id"]) for t, p in self.recorder.seen(
                ns, lambda t, p: t == "DELETED" and
                (p["metadata"].get("labels") or {}).get("spark-role") == "executor")} ==
            {1, 2, 3, 4, 5}, 5)
        job = self.wait_for("the scheduler's job Completed", lambda: (
            lambda j: j if j and j["phase"] in ("Completed", "Withdrawn") else None)(
            self.job(ns, name)), 10)
        self.assertEqual(job["phase"], "Completed", job)
        nodes = self.wait_for("every node's batch room free again", lambda: (
            lambda ns_: ns_ if all(n["free"] == n["batch"] == BATCH for n in ns_) else None)(
            self.sched("/api/v1/nodes")["nodes"]), 5)
        self.assertEqual(sorted(n["name"] for n in nodes), sorted(NODES))
        self.assertTrue(all(n["used"] == {"cpuMillicores": 0, "memoryBytes": 0} and
                            n["health"] == "fresh" for n in nodes), nodes)
        self.assertEqual(self.sched("/api/v1/jobs")["waiting"], [])
        metrics = self.sched("/metrics")
        mutated = re.search(r'gleaner_scheduler_webhook_reviews_total\{outcome="mutated"\} (\d+)',
                            metrics)
        self.assertIsNotNone(mutated, "no mutated reviews in /metrics")
        self.assertGreaterEqual(int(mutated.group(1)), 6)  # driver + 5 executors (+ probes)
        self.log("done")

    def test_an_evicted_executor_is_not_placed_back_on_its_node(self):
        """No ping-pong (docs/scheduler.md, --reclaim-hold): gleaner-agent evicts an executor
        through the Eviction API; the API server marks it DisruptionTarget
        (EvictionByEvictionAPI) before deleting it, and the scheduler places Spark's
        replacement on the other node, though the room the eviction freed is the fullest
        fit, with a GleanerAvoidedNode Event saying why."""
        ns_obj, app = self.example_app()
        ns, name = app["metadata"]["namespace"], app["metadata"]["name"]
        app["metadata"]["annotations"][SCRIPT + "run-seconds"] = "60"  # runs throughout
        self.create(ns_obj)
        self.probe_webhook(ns)
        self.create(app)
        executors = self.wait_for("4 executors running", lambda: (
            lambda ps: ps if len(ps) == 4 and all(
                p["status"].get("phase") == "Running" for p in ps) else None)(
            self.pods(ns, "spark-role=executor")), 15)
        # 9 cpu over 2 x 5: the driver's node holds it and two executors, and is full.
        driver_node = self.pod(ns, name + "-driver")["spec"]["nodeName"]
        other = next(n for n in NODES if n != driver_node)
        victim = next(p for p in executors if p["spec"]["nodeName"] == driver_node)
        # The other node's agent now reports 8 cpu: room there for a 2-cpu executor with
        # 2 cpu to spare, so the victim's own freed room (exactly 2 cpu) is the fuller fit.
        self.post_node_report(other, 100, dict(BATCH, cpuMillicores=8000))
        self.wait_for("8 cpu of batch room published on " + other, lambda: self.node(other)[
            "status"]["allocatable"].get(BATCH_CPU) == "8000", 10)

        self.call("POST", "/api/v1/namespaces/%s/pods/%s/eviction" % (
            ns, victim["metadata"]["name"]), {
                "apiVersion": "policy/v1", "kind": "Eviction",
                "metadata": {"name": victim["metadata"]["name"], "namespace": ns}})
        replacement = self.wait_for("executor 5 running", lambda: (
            lambda ps: ps[0] if ps and ps[0]["status"].get("phase") == "Running" else None)(
            self.pods(ns, "spark-role=executor,spark-exec-id=5")), 15)
        marked = [p for t, p in self.recorder.seen(ns, lambda t, p: p["metadata"]["uid"] ==
                                                    victim["metadata"]["uid"])
                  if any(c.get("type") == "DisruptionTarget" and
                         c.get("reason") == "EvictionByEvictionAPI"
                         for c in p["status"].get("conditions") or [])]
        self.assertTrue(marked, "the API server did not mark the evicted executor")
        self.assertEqual(replacement["spec"]["nodeName"], other,
                         "the replacement went back into the room its eviction freed")
        cluster = self.scheduler_args.get("--cluster-name", "default")
        steered = self.wait_for("a GleanerAvoidedNode Event on executor 5", lambda: [
            e for e in self.events(ns, replacement["metadata"]["name"])
            if e["reason"] == "GleanerAvoidedNode"], 5)
        self.assertIn("not placed on node %s/%s: a pod of this job was evicted there" % (
            cluster, driver_node), steered[0]["message"])
        self.assertIn("gleaner_scheduler_placements_steered_away_total 1\n", self.sched("/metrics"))

    def test_ack_guide_application_is_placed_as_one_gang(self):
        """ACK One's guide submits its SparkApplication with only the annotation
        sparkoperator.k8s.io/koordinator-colocation: "true" on both templates, no
        schedulerName and a coreLimit: the webhook makes the pods batch pods, gives them
        gleaner-scheduler (kube-scheduler would place them one by one) and keeps coreLimit
        as the batch-cpu limit."""
        ns_obj, app = self.example_app()
        ns, name = app["metadata"]["namespace"], app["metadata"]["name"]
        for role in ("driver", "executor"):
            part = app["spec"][role]
            part.pop("schedulerName", None)
            part["template"] = {"metadata": {"annotations": {
                "sparkoperator.k8s.io/koordinator-colocation": "true"}}}
        app["spec"]["driver"]["coreLimit"] = "1200m"
        # No ClusterColocationProfile (the example's would name the scheduler itself): the
        # annotation alone decides, as on a cluster set up by the guide.
        self.call("DELETE", "/apis/config.koordinator.sh/v1alpha1/clustercolocationprofiles/"
                  "spark-batch")
        self.create(ns_obj)
        probe = {"apiVersion": "v1", "kind": "Pod",
                 "metadata": {"name": "profile-probe", "namespace": ns,
                              "labels": {"spark-role": "driver"}},
                 "spec": {"containers": [{"name": "c", "image": "busybox"}]}}

        def profile_gone():
            try:
                pod = self.call("POST", "/api/v1/namespaces/%s/pods" % ns, body=probe,
                                query={"dryRun": "All"})
            except ApiException:
                return False  # the webhook not ready yet (failurePolicy Fail)
            return "koordinator.sh/qosClass" not in (pod["metadata"].get("labels") or {})
        self.wait_for("the webhook answering without the profile", profile_gone, 10)
        self.create(app)
        driver = self.wait_for("the driver running", lambda: (
            lambda p: p if p and p["status"].get("phase") == "Running" else None)(
            self.pod(ns, name + "-driver")), 15)
        self.assertEqual(driver["spec"]["schedulerName"], "gleaner-scheduler")
        main = next(c for c in driver["spec"]["containers"]
                    if c["name"].startswith("spark-kubernetes-"))
        self.assertEqual(main["resources"]["requests"][BATCH_CPU], "1000")
        self.assertEqual(main["resources"]["limits"][BATCH_CPU], "1200")
        self.assertEqual(driver["status"]["qosClass"], "BestEffort")
        executors = self.wait_for("4 executors running", lambda: (
            lambda ps: ps if len(ps) == 4 and all(
                p["status"].get("phase") == "Running" for p in ps) else None)(
            self.pods(ns, "spark-role=executor")), 15)
        self.assertEqual({p["spec"]["schedulerName"] for p in executors}, {"gleaner-scheduler"})
        # One gang: the scheduler's job holds the driver and every executor.
        job = self.wait_for("the scheduler's job Running", lambda: (
            lambda j: j if j and j["phase"] == "Running" else None)(self.job(ns, name)), 10)
        self.assertEqual(job["executors"], 4)
        self.assertEqual(len(job["pods"]), 5)

    def test_unlabelled_namespace_pods_stay_burstable(self):
        ns_obj, app = self.example_app(namespace="spark-plain")
        ns, name = "spark-plain", app["metadata"]["name"]
        # The scenario needs the scheduler to know what the LS pods leave of each Node's
        # regular allocatable (from its Node and pod informers), as it knows the batch room.
        regular_left = {"cpuMillicores": NODE_CPU_MILLI - LS_CPU_MILLI,
                        "memoryBytes": NODE_MEMORY - LS_MEMORY}
        self.wait_for("the scheduler to account the LS pods' regular requests", lambda: all(
            n.get("regularFree", regular_left) == regular_left
            for n in self.sched("/api/v1/nodes")["nodes"]), 10)
        self.create(ns_obj)
        self.create(app)
        driver_name = name + "-driver"

        # No webhook call (the configuration's namespaceSelector): Spark's own requests
        # stay, the pod is Burstable and not labelled BE.
        driver = self.wait_for("the driver pod", lambda: self.pod(ns, driver_name), 15)
        main = driver["spec"]["containers"][0]
        self.assertEqual(main["resources"]["requests"], {"cpu": "1", "memory": "2048Mi"})
        self.assertNotIn(BATCH_CPU, json.dumps(driver["spec"]))
        self.assertEqual(driver["status"]["qosClass"], "Burstable")
        self.assertNotIn("koordinator.sh/qosClass", driver["metadata"].get("labels") or {})
        self.assertEqual([c for c in self.admin("GET", "webhook-calls")["calls"]
                          if c["namespace"] == ns], [])

        # What really happens: the pod still names gleaner-scheduler (the example's
        # schedulerName). A pod that kept cpu/memory requests is admitted by the kubelet
        # against the Node's *regular* allocatable, so the scheduler places it only where
        # both the batch room and that regular allocatable fit (docs/scheduler.md, "Regular
        # allocatable"). Here the LS pods leave 500m of each node's 8 cpu: the 1-cpu driver
        # fits neither node, so it is never bound (and never reaches a kubelet to be
        # rejected OutOfcpu); the job stays Pending and the scheduler says why, in the
        # job's reason and in a GleanerPending Event on the driver. (Before that
        # accounting, the scheduler bound it by batch room alone and the kubelet rejected
        # it OutOfcpu.)
        reason_prefix = "waiting for regular allocatable"
        job = self.wait_for("the scheduler's job pending on regular allocatable", lambda: (
            lambda j: j if j and j["phase"] == "Pending" and
            j["reason"].startswith(reason_prefix) else None)(self.job(ns, name)), 15)
        self.assertFalse(job["unschedulable"], job)
        self.assertEqual(job["pods"], [])
        event = self.wait_for("a GleanerPending event on the driver", lambda: next(
            (e for e in self.events(ns, driver_name) if e["reason"] == "GleanerPending"),
            None), 5)
        self.assertEqual(event["message"], job["reason"])
        self.assertEqual(event["involvedObject"]["uid"], driver["metadata"]["uid"])
        for n in self.sched("/api/v1/nodes")["nodes"]:
            self.assertEqual(n["used"], {"cpuMillicores": 0, "memoryBytes": 0}, n)
            self.assertEqual(n.get("regularFree", regular_left), regular_left, n)
        driver = self.pod(ns, driver_name)
        self.assertNotIn("nodeName", driver["spec"], "bound by batch room alone: the kubelet "
                         "will reject it OutOfcpu")
        self.assertEqual(driver["status"]["phase"], "Pending")
        self.assertFalse([e for e in self.events(ns, driver_name)
                          if e["reason"].startswith("OutOf")])
        self.assertEqual(self.app_state(ns, name), "SUBMITTED")
        self.assertEqual(self.pods(ns, "spark-role=executor"), [])

    def assert_batch_pod(self, pod, cpu_milli, memory):
        """What the colocation webhook makes of a Spark pod: BE, batch resources only."""
        where = pod["metadata"]["name"]
        labels = pod["metadata"].get("labels") or {}
        self.assertEqual(labels.get("koordinator.sh/qosClass"), "BE", where)
        self.assertEqual(pod["status"].get("qosClass"), "BestEffort", where)
        self.assertEqual(pod["spec"]["schedulerName"], "gleaner-scheduler", where)
        self.assertEqual(pod["spec"]["priorityClassName"], "koord-batch", where)
        # Koordinator's value of koord-batch, from the shipped PriorityClass.
        self.assertEqual(pod["spec"]["priority"], 5000, where)
        want = {BATCH_CPU: str(cpu_milli), BATCH_MEMORY: str(memory)}
        for c in pod["spec"]["containers"]:
            res = c.get("resources") or {}
            if c["name"].startswith("spark-kubernetes-"):
                self.assertEqual(res.get("requests"), want, where)
                self.assertEqual(res.get("limits"), want, where)
            for part in ("requests", "limits"):
                self.assertFalse({"cpu", "memory"} & set(res.get(part) or {}), where)
        self.assertTrue(pod["spec"].get("nodeName"), where)


def main():
    global SCHEDULER
    argv = [sys.argv[0]]
    args = iter(sys.argv[1:])
    for arg in args:
        if arg in ("--bin-dir", "--scheduler"):
            value = next(args, "")
            SCHEDULER = os.path.join(value, "gleaner-scheduler") if arg == "--bin-dir" else value
        elif arg.startswith(("--bin-dir=", "--scheduler=")):
            flag, value = arg.split("=", 1)
            SCHEDULER = os.path.join(value, "gleaner-scheduler") if flag == "--bin-dir" \
                else value
        else:
            argv.append(arg)
    program = unittest.main(argv=argv, exit=False, verbosity=2)
    result = program.result
    if not result.wasSuccessful():
        sys.exit(1)
    # Everything skipped (no binary): 77, ctest's SKIP_RETURN_CODE.
    sys.exit(77 if result.testsRun and len(result.skipped) == result.testsRun else 0)


if __name__ == "__main__":
    main()
