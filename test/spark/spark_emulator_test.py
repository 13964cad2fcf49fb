#!/usr/bin/python3
"""Drives spark_emulator.py against test/apiserver/apiserver.py: the test stands in for
the scheduler (it binds pending pods through pods/binding) and watches what the emulated
operator, Spark drivers and kubelets do to pods and SparkApplications."""

import os
import re
import sys
import unittest

from kubernetes import client

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from spark_emulator_harness import FAST, GROUP, PLURAL, S, VERSION, EmulatorCase  # noqa: E402


class SparkEmulatorTest(EmulatorCase):
    # --- tests ---------------------------------------------------------------------------
    def test_driver_pod_shape_template_merge_and_suspend(self):
        ns = "shape"
        template = {"metadata": {"labels": {"tmpl": "yes", "spark-role": "template-value"},
                                 "annotations": {"tmpl-note": "from-template"}},
                    "spec": {"containers": [
                        {"name": "sidecar", "image": "busybox"},
                        {"name": "spark-kubernetes-driver",
                         "env": [{"name": "FROM_TEMPLATE", "value": "1"}],
                         "resources": {"requests": {"kubernetes.io/batch-cpu": "2000"},
                                       "limits": {"kubernetes.io/batch-cpu": "2000"}}}]}}
        spec = {"type": "Python", "mainApplicationFile": "local:///opt/app/job.py",
                "sparkVersion": "3.5.3", "suspend": True,
                "sparkConf": {"spark.kubernetes.driver.annotation.app-id": "{{APP_ID}}"},
                "driver": {"cores": 2, "coreLimit": "2500m", "memory": "1g",
                           "labels": {"team": "a"}, "annotations": {"note": "driver"},
                           "serviceAccount": "spark-sa", "schedulerName": "gleaner-scheduler",
                           "priorityClassName": "batch-high", "nodeSelector": {"pool": "batch"},
                           "tolerations": [{"key": "batch", "operator": "Exists",
                                            "effect": "NoSchedule"}],
                           "env": [{"name": "FROM_SPEC", "value": "1"}],
                           "template": template},
                "executor": {"instances": 1}}
        labels = {"gleaner.io/queue": "q1", "kueue.x-k8s.io/queue-name": "kq"}
        app = self.create_app(ns, "shape-app", spec, {S + "seed": "7"}, labels)
        self.wait_state(ns, "shape-app", "SUSPENDED")
        self.assertIsNone(self.pod(ns, "shape-app-driver"), "a suspended app is not submitted")

        self.custom.patch_namespaced_custom_object(GROUP, VERSION, ns, PLURAL, "shape-app",
                                                   {"spec": {"suspend": False}})
        status = self.wait_state(ns, "shape-app", "SUBMITTED")["status"]
        self.assertEqual(status["driverInfo"]["podName"], "shape-app-driver")
        self.assertEqual((status["submissionAttempts"], status["executionAttempts"]), (1, 1))
        driver = self.wait_for("the driver pod", lambda: self.pod(ns, "shape-app-driver"))
        meta, pspec = driver["metadata"], driver["spec"]

        app_id = meta["labels"]["spark-app-selector"]
        self.assertRegex(app_id, r"^spark-[0-9a-f]{32}$")
        self.assertEqual(meta["labels"]["spark-role"], "driver")  # Spark's own wins
        expected = {"spark-app-name": "shape-app", "spark-version": "3.5.3",
                    "sparkoperator.k8s.io/app-name": "shape-app",
                    "sparkoperator.k8s.io/launched-by-spark-operator": "true",
                    "sparkoperator.k8s.io/submission-id": status["submissionID"],
                    "team": "a", "tmpl": "yes", "gleaner.io/queue": "q1"}
        self.assertEqual({k: meta["labels"].get(k) for k in expected}, expected)
        self.assertNotIn("kueue.x-k8s.io/queue-name", meta["labels"])
        self.assertNotIn("sparkoperator.k8s.io/mutated-by-spark-operator", meta["labels"],
                         "only added when the driver has no template")
        self.assertEqual(meta["annotations"], {"tmpl-note": "from-template", "note": "driver",
                                               "app-id": app_id})
        self.assertEqual(meta["ownerReferences"], [{
            "apiVersion": "sparkoperator.k8s.io/v1beta2", "kind": "SparkApplication",
            "name": "shape-app", "uid": app["metadata"]["uid"], "controller": True,
            "blockOwnerDeletion": True}])

        # Spark's container goes last, keeps the template's name, resources and env.
        self.assertEqual([c["name"] for c in pspec["containers"]],
                         ["sidecar", "spark-kubernetes-driver"])
        main = pspec["containers"][1]
        memory = "%dMi" % (1024 + int(0.4 * 1024))  # Python: overhead factor 0.4
        self.assertEqual(main["resources"], {
            "requests": {"kubernetes.io/batch-cpu": "2000", "cpu": "2", "memory": memory},
            "limits": {"kubernetes.io/batch-cpu": "2000", "cpu": "2500m", "memory": memory}})
        env = [e["name"] for e in main["env"]]
        self.assertEqual(env[0], "FROM_TEMPLATE")
        self.assertEqual(env[-1], "FROM_SPEC")  # the operator's webhook appends spec env
        self.assertIn("SPARK_DRIVER_BIND_ADDRESS", env)
        self.assertEqual(main["image"], "spark:3.5.5")
        self.assertEqual(main["args"][:3], ["driver", "--properties-file",
                                            "/opt/spark/conf/spark.properties"])
        self.assertEqual(pspec["restartPolicy"], "Never")
        self.assertEqual(pspec["schedulerName"], "gleaner-scheduler")
        self.assertEqual(pspec["priorityClassName"], "batch-high")
        self.assertEqual(pspec["serviceAccountName"], "spark-sa")
        self.assertEqual(pspec["nodeSelector"], {"pool": "batch"})
        self.assertEqual(pspec["tolerations"], [{"key": "batch", "operator": "Exists",
                                                 "effect": "NoSchedule"}])

        # Deleting the app takes its driver (ownerReferences); the same seed, name and
        # namespace give the same ids again.
        self.custom.delete_namespaced_custom_object(GROUP, VERSION, ns, PLURAL, "shape-app")
        self.wait_for("the driver to be collected",
                      lambda: self.pod(ns, "shape-app-driver") is None)
        spec["suspend"] = False
        self.create_app(ns, "shape-app", spec, {S + "seed": "7"}, labels)
        again = self.wait_state(ns, "shape-app", "SUBMITTED")["status"]
        self.assertEqual(again["submissionID"], status["submissionID"])
        driver = self.wait_for("the new driver pod", lambda: self.pod(ns, "shape-app-driver"))
        self.assertEqual(driver["metadata"]["labels"]["spark-app-selector"], app_id)

    def test_executors_failure_replacement_and_completion(self):
        ns = "static"
        self.policies[ns] = lambda pod: "n1"
        template = {"metadata": {"labels": {"tmpl": "exec"}},
                    "spec": {"containers": [{"name": "spark-kubernetes-executor", "resources": {
                        "requests": {"kubernetes.io/batch-memory": "1Gi"}}}]}}
        app = self.create_app(ns, "pi", {
            "sparkConf": dict(FAST, **{"spark.kubernetes.allocation.batch.size": "2"}),
            "driver": {"cores": 1, "memory": "512m"},
            "executor": {"instances": 3, "cores": 1, "coreRequest": "500m", "memory": "512m",
                         "memoryOverhead": "128m", "labels": {"exec-label": "x"},
                         "template": template}},
            {S + "run-seconds": "1.5", S + "run-from": "all-executors",
             S + "fail-executors": "2@0.2"})
        self.wait_state(ns, "pi", "RUNNING")
        driver = self.pod(ns, "pi-driver")
        app_id = driver["metadata"]["labels"]["spark-app-selector"]

        # Executor 4 replaces the failed 2.
        history = self.wait_replaced(ns, 4, 2)
        self.assertEqual(history[2]["phases"][-1], "Failed")
        failed = history[2]["pod"]["status"]["containerStatuses"][0]["state"]["terminated"]
        self.assertEqual((failed["exitCode"], failed["reason"]), (1, "Error"))

        pod = history[1]["pod"]
        meta = pod["metadata"]
        match = re.match(r"^(pi-[0-9a-f]{10,16})-exec-1$", meta["name"])
        self.assertIsNotNone(match, meta["name"])
        self.assertTrue(all(h["pod"]["metadata"]["name"] == "%s-exec-%d" % (match.group(1), i)
                            for i, h in history.items()), "one prefix for all executors")
        expected = {"spark-app-selector": app_id, "spark-role": "executor", "spark-exec-id": "1",
                    "spark-exec-resourceprofile-id": "0", "spark-app-name": "pi",
                    "spark-version": "3.5.5", "sparkoperator.k8s.io/app-name": "pi",
                    "sparkoperator.k8s.io/launched-by-spark-operator": "true",
                    "sparkoperator.k8s.io/submission-id": driver["metadata"]["labels"][
                        "sparkoperator.k8s.io/submission-id"],
                    "exec-label": "x", "tmpl": "exec"}
        self.assertEqual(meta["labels"], expected)
        self.assertEqual(meta["ownerReferences"], [
            {"apiVersion": "sparkoperator.k8s.io/v1beta2", "kind": "SparkApplication",
             "name": "pi", "uid": app["metadata"]["uid"]},
            {"apiVersion": "v1", "kind": "Pod", "name": "pi-driver",
             "uid": driver["metadata"]["uid"], "controller": True}])
        main = pod["spec"]["containers"][-1]
        self.assertEqual(main["name"], "spark-kubernetes-executor")
        self.assertEqual(main["resources"], {
            "requests": {"kubernetes.io/batch-memory": "1Gi", "memory": "640Mi", "cpu": "500m"},
            "limits": {"memory": "640Mi"}})
        self.assertEqual(pod["spec"]["restartPolicy"], "Never")
        self.assertEqual(pod["spec"]["hostname"], meta["name"])

        # An executor deleted by someone else is replaced too.
        self.core.delete_namespaced_pod(history[3]["pod"]["metadata"]["name"], ns)
        history = self.wait_replaced(ns, 5, 3)
        self.assertEqual(history[3]["phases"][-1], "Running")

        # Batches of two: 1 and 2 together, 3 in the next round, a batch delay (100 ms) on.
        created = [(p["metadata"]["labels"]["spark-exec-id"], at) for t, p, at in
                   self.recorder.seen(ns, lambda t, p: t == "ADDED" and p["metadata"]["labels"]
                                      .get("spark-role") == "executor", times=True)]
        self.assertEqual([i for i, _ in created[:3]], ["1", "2", "3"])
        self.assertGreater(created[2][1] - created[1][1], 0.04, created)

        final = self.wait_state(ns, "pi", "COMPLETED")
        self.assertEqual(self.executors(ns), {}, "the driver deletes its executors at the end")
        history = self.wait_executors_deleted(ns)
        self.assertEqual(sorted(history), [1, 2, 3, 4, 5], "ids are never reused")
        driver = self.pod(ns, "pi-driver")
        self.assertEqual(driver["status"]["phase"], "Succeeded")
        terminated = driver["status"]["containerStatuses"][-1]["state"]["terminated"]
        self.assertEqual(terminated["exitCode"], 0)
        status = final["status"]
        self.assertEqual(status["sparkApplicationId"], app_id)
        self.assertTrue(status["terminationTime"])
        self.assertEqual(set(status["executorState"]),
                         set(h["pod"]["metadata"]["name"] for h in history.values()))

    def test_dynamic_allocation_scales_up_and_down(self):
        ns = "dyn"
        self.policies[ns] = lambda pod: "n1"
        self.create_app(ns, "dyn", {
            "sparkConf": dict(FAST, **{
                "spark.dynamicAllocation.executorIdleTimeout": "300ms",
                "spark.dynamicAllocation.schedulerBacklogTimeout": "100ms",
                "spark.kubernetes.dynamicAllocation.deleteGracePeriod": "1s"}),
            "dynamicAllocation": {"enabled": True, "initialExecutors": 2, "minExecutors": 1,
                                  "maxExecutors": 4},
            "executor": {"cores": 1, "memory": "512m"}},
            {S + "demand": "0.6:4,1.6:1", S + "run-seconds": "3.2", S + "run-from": "driver"})
        self.wait_for("two initial executors", lambda: sorted(self.executors(ns)) == [1, 2])

        def live():
            return {i for i, h in self.executor_history(ns).items() if not h["deleted"]}

        self.wait_for("scale-up to four", lambda: live() == {1, 2, 3, 4})
        def all_running():
            found = self.executors(ns)
            phases = [p["status"]["phase"] for p in found.values()]
            return found if len(found) == 4 and set(phases) == {"Running"} else None

        running = self.wait_for("four running executors", all_running)
        self.assertEqual(sorted(running), [1, 2, 3, 4])
        self.wait_for("scale-down to one", lambda: live() == {1}, timeout=6)
        history = self.executor_history(ns)
        for i in (2, 3, 4):  # asked to exit: their pods completed, then were deleted
            self.assertEqual(history[i]["phases"][-1], "Succeeded", history[i]["phases"])
        self.assertEqual(sorted(history), [1, 2, 3, 4], "no executor beyond the target")
        self.wait_state(ns, "dyn", "COMPLETED", timeout=6)
        self.assertEqual(self.executors(ns), {})

    def test_kubelet_admission(self):
        ns = "admit"

        def pod(name, node, requests, limits=None):
            resources = {"requests": requests}
            if limits:
                resources["limits"] = limits
            self.core.create_namespaced_pod(ns, {
                "metadata": {"name": name},
                "spec": {"nodeName": node, "containers": [
                    {"name": "c", "image": "busybox", "resources": resources}]}})

        def settled(name):
            p = self.pod(ns, name)
            return p if p["status"]["phase"] != "Pending" else None

        pod("foreign", "elsewhere", {"cpu": "1"})
        pod("first", "small", {"cpu": "3"})
        pod("hog", "small", {"kubernetes.io/batch-cpu": "2000"})
        pod("big", "small", {"memory": "10Gi"})
        pod("second", "small", {"cpu": "2"})
        # The API server requires a limit equal to the request for an extended resource that
        # is not kubernetes.io/-prefixed (test/apiserver/pod_validation.py cites the rule).
        pod("gpu", "small", {"cpu": "500m", "example.com/gpu": "1"}, {"example.com/gpu": "1"})
        self.assertEqual(self.wait_for("first", lambda: settled("first"))["status"]["phase"],
                         "Running")
        for name, reason, message in (
                ("hog", "OutOfkubernetes.io/batch-cpu", "kubernetes.io/batch-cpu, requested: "
                                                        "2000, used: 0, capacity: 1000"),
                ("big", "OutOfmemory", "memory, requested: 10737418240, used: 0, capacity: "
                                       "8589934592"),
                ("second", "OutOfcpu", "cpu, requested: 2000, used: 3000, capacity: 4000")):
            status = self.wait_for(name, lambda: settled(name))["status"]
            self.assertEqual((status["phase"], status["reason"], status["message"]), (
                "Failed", reason, "Pod was rejected: Node didn't have enough resource: " +
                message))
        gpu = self.wait_for("gpu", lambda: settled("gpu"))["status"]
        self.assertEqual(gpu["phase"], "Running", "extended resources a node lacks are ignored")
        self.assertEqual(self.pod(ns, "foreign")["status"]["phase"], "Pending",
                         "not this kubelet's node")
        events = self.core.list_namespaced_event(ns, field_selector="reason=OutOfcpu").items
        self.assertEqual([e.involved_object.name for e in events], ["second"])

        # An executor the kubelet rejects is deleted and replaced under a new id. (With
        # "first" gone the node has the CPU, so memory is what it lacks.) An executor no
        # one schedules stays pending: Spark waits for it rather than replacing it.
        self.core.delete_namespaced_pod("first", ns)

        def policy(p):
            name = p.metadata.name
            if name.startswith("waits-") and name.endswith("-exec-2"):
                return None
            return "small" if name.startswith("rej-") and name.endswith("-exec-1") else "n1"

        self.policies[ns] = policy
        self.create_app(ns, "rej", {
            "sparkConf": FAST, "executor": {"instances": 1, "memory": "16g"}},
            {S + "run-seconds": "0.3"})
        self.create_app(ns, "waits", {"sparkConf": FAST, "executor": {"instances": 2}},
                        {S + "run-seconds": "0.6"})
        # Executor 2 replaces the rejected 1.
        history = self.wait_replaced(ns, 2, 1, "rej")
        rejected = history[1]["pod"]["status"]
        self.assertEqual((rejected["phase"], rejected["reason"]), ("Failed", "OutOfmemory"))
        self.wait_state(ns, "rej", "COMPLETED")
        self.wait_state(ns, "waits", "COMPLETED")
        history = self.wait_executors_deleted(ns, "waits")
        self.assertEqual(sorted(history), [1, 2], "the pending executor was not replaced")
        self.assertEqual(history[2]["phases"], ["Pending"],
                         "executor 2 was held Pending until the end")

    def test_a_deleted_pod_is_finished_by_its_kubelet(self):
        ns = "finish"
        # The kubelet holds its nodes' heartbeat Leases: the API server leaves their pods'
        # deletion to it.
        coord = client.CoordinationV1Api(self.client)
        self.wait_for("n1's Lease in kube-node-lease", lambda: any(
            lease.metadata.name == "n1"
            for lease in coord.list_namespaced_lease("kube-node-lease").items))
        self.core.create_namespaced_pod(ns, {
            "metadata": {"name": "victim"},
            "spec": {"nodeName": "n1", "terminationGracePeriodSeconds": 20,
                     "containers": [{"name": "c", "image": "busybox"}]}})
        self.wait_for("victim running", lambda: (
            self.pod(ns, "victim") or {}).get("status", {}).get("phase") == "Running")
        uid = self.pod(ns, "victim")["metadata"]["uid"]
        self.core.delete_namespaced_pod("victim", ns)
        self.wait_for("victim gone", lambda: self.pod(ns, "victim") is None)
        # On the wire: marked with its grace period, then the kubelet's delete (grace 0),
        # then gone.
        seen = [(etype, pod["metadata"].get("deletionGracePeriodSeconds"))
                for etype, pod in self.wait_for("victim's deletion seen", lambda: (
                    lambda h: h if h and h[-1][0] == "DELETED" else None)(
                        self.recorder.seen(ns, lambda t, p: p["metadata"]["uid"] == uid)))
                if pod["metadata"].get("deletionTimestamp")]
        self.assertEqual(seen, [("MODIFIED", 20), ("MODIFIED", 0), ("DELETED", 0)])

    def evict_running_executor(self, ns, name, conf, template_spec=None):
        """App `name` with one executor on n1 whose job hands it 2 s tasks; once its first
        task runs the executor is evicted (the Eviction API, as gleaner-agent does it).
        Returns (its pod as evicted, its executor history once the pod is gone)."""
        self.policies[ns] = lambda pod: "n1"
        executor = {"instances": 1, "cores": 1, "memory": "512m"}
        if template_spec:
            executor["template"] = {"spec": template_spec}
        self.create_app(ns, name, {"sparkConf": dict(FAST, **conf),
                                   "driver": {"cores": 1, "memory": "512m"},
                                   "executor": executor},
                        {S + "run-seconds": "30", S + "run-from": "first-executor",
                         S + "task-seconds": "2", S + "migrate-seconds": "0.3"})
        pod = self.wait_for("executor 1 running", lambda: (lambda p: p if p and (
            p.get("status") or {}).get("phase") == "Running" else None)(
                self.executors(ns).get(1)))
        self.wait_for("the job's clock started (executor 1's first task handed)", lambda: (
            "driver-%s-driver: job runs for" % name) in self.emulator_log())
        self.core.create_namespaced_pod_eviction(pod["metadata"]["name"], ns, client.V1Eviction(
            metadata=client.V1ObjectMeta(name=pod["metadata"]["name"], namespace=ns)))
        history = self.wait_for("executor 1's pod gone", lambda: (
            lambda h: h if h.get(1, {}).get("deleted") else None)(self.executor_history(ns)))
        return pod, history[1]

    def emulator_log(self):
        with open(self.log.name) as f:
            return f.read()

    @staticmethod
    def exit_code(pod):
        statuses = (pod.get("status") or {}).get("containerStatuses") or []
        terminated = [(s.get("state") or {}).get("terminated") for s in statuses]
        return [t["exitCode"] for t in terminated if t]

    def test_an_evicted_executor_decommissions_when_spark_has_it_enabled(self):
        pod, history = self.evict_running_executor("decom", "drained", {
            "spark.decommission.enabled": "true", "spark.storage.decommission.enabled": "true"})
        container = pod["spec"]["containers"][0]
        self.assertEqual(container["lifecycle"], {"preStop": {"exec": {"command": [
            "/opt/decom.sh"]}}})
        # The preStop hook's SIGPWR: the running task finished, the blocks migrated, then
        # the JVM exited 0 before the kubelet finished the deletion.
        self.assertEqual(history["phases"][-1], "Succeeded", history["phases"])
        self.assertEqual(self.exit_code(history["pod"]), [0])
        log = self.emulator_log()
        self.assertIn("executor 1: Finished decommissioning", log)
        self.assertNotIn("driver-drained-driver: executor 1 lost mid-task", log)

    def test_an_evicted_executor_without_decommissioning_loses_its_task(self):
        pod, history = self.evict_running_executor("nodecom", "killed", {})
        self.assertNotIn("lifecycle", pod["spec"]["containers"][0])
        # Stopped at once: deleted while Running, its task's work so far lost.
        self.assertEqual(history["phases"][-1], "Running", history["phases"])
        self.assertIn("driver-killed-driver: executor 1 lost mid-task", self.emulator_log())

    def test_a_decommission_longer_than_the_grace_period_is_killed(self):
        # 2 s tasks, a 1 s grace period: the kubelet kills the executor before it is done.
        _, history = self.evict_running_executor(
            "shortgrace", "cut", {"spark.decommission.enabled": "true"},
            {"terminationGracePeriodSeconds": 1})
        self.assertEqual(history["phases"][-1], "Failed", history["phases"])
        self.assertEqual(self.exit_code(history["pod"]), [137])
        self.assertIn("driver-cut-driver: executor 1 lost mid-task", self.emulator_log())

    def test_a_pod_created_after_its_owner_went_is_collected(self):
        ns = "orphans"
        owner = {"metadata": {"name": "owner"},
                 "spec": {"containers": [{"name": "c", "image": "busybox"}]}}
        owner_uid = self.core.create_namespaced_pod(ns, owner).metadata.uid
        def dependent(name, owner_uid):
            return {"metadata": {"name": name, "ownerReferences": [{
                "apiVersion": "v1", "kind": "Pod", "name": "owner", "uid": owner_uid}]},
                "spec": {"containers": [{"name": "c", "image": "busybox"}]}}
        # Created in this order; the collector judges them in the order it sees them, so
        # once the last is gone the first two have been judged.
        self.core.create_namespaced_pod(ns, dependent("kept", owner_uid))
        self.core.create_namespaced_pod(ns, dependent("wrong-uid", "0000-not-the-owner"))
        self.core.create_namespaced_pod(ns, {
            "metadata": {"name": "no-owner", "ownerReferences": [{
                "apiVersion": "sparkoperator.k8s.io/v1beta2", "kind": "SparkApplication",
                "name": "deleted-app", "uid": "1111-gone"}]},
            "spec": {"containers": [{"name": "c", "image": "busybox"}]}})
        self.wait_for("the pod whose app never existed collected",
                      lambda: self.pod(ns, "no-owner") is None)
        self.wait_for("the pod naming another uid collected",
                      lambda: self.pod(ns, "wrong-uid") is None)
        self.assertIsNotNone(self.pod(ns, "kept"), "a pod whose owner lives was collected")

    def test_submission_failures(self):
        ns = "submit"
        prefix = "/api/v1/namespaces/%s/pods" % ns
        # Refused (a webhook's 403): SUBMISSION_FAILED, then FAILED (restartPolicy Never).
        self.arm_failure(prefix, 403)
        self.create_app(ns, "denied", {})
        status = self.wait_state(ns, "denied", "FAILED")["status"]
        message = status["applicationState"]["errorMessage"]
        self.assertTrue(message.startswith("failed to submit spark application: failed to run "
                                           "spark-submit: "), message)
        self.assertIn("code=403", message)
        self.assertEqual(status["submissionAttempts"], 1)
        self.assertNotIn("executionAttempts", status)
        self.assertIsNone(self.pod(ns, "denied-driver"))

        # A 500 is retried by Spark's Kubernetes client: submitted at the first attempt.
        self.arm_failure(prefix, 500)
        self.create_app(ns, "flaky", {})
        status = self.wait_state(ns, "flaky", "SUBMITTED")["status"]
        self.assertEqual(status["submissionAttempts"], 1)

        # spark-submit itself refuses an application without an image.
        self.create_app(ns, "no-image", {"image": None})
        status = self.wait_state(ns, "no-image", "FAILED")["status"]
        self.assertIn("Must specify the driver container image",
                      status["applicationState"]["errorMessage"])

        # OnFailure with a submission retry: the second attempt, 1 s later, goes through.
        self.arm_failure(prefix, 403)
        self.create_app(ns, "retry", {"restartPolicy": {
            "type": "OnFailure", "onSubmissionFailureRetries": 1,
            "onSubmissionFailureRetryInterval": 1}})
        status = self.wait_state(ns, "retry", "SUBMITTED", timeout=6)["status"]
        self.assertEqual(status["submissionAttempts"], 2)
        self.assertIsNotNone(self.pod(ns, "retry-driver"))


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1] + sys.argv[1:], verbosity=2)
