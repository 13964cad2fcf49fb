#!/usr/bin/python3
"""A fleet: a hub and three member clusters (each an instance of the test API server), and
the real gleaner-scheduler binary run with --hub and --cluster as docs/fleet.md shows. The
user side speaks through python3-kubernetes, as kubectl would: the seeds' PropagationPolicy
(ACK One Fleet's group) and spark-pi SparkApplication go to the hub; the application runs
in the member whose batch capacity fits it best, its state shows on the hub, a driver left
pending there (an LS surge took the room) is reclaimed after the timeout and the
application completes in another member; deleting it on the hub deletes it everywhere.
Two tenants of the hub's ElasticQuotaTree: one borrows the whole fleet, the other, within
its guaranteed min, takes back what it needs (the borrower's newest application is
reclaimed from its member and waits on the hub). Karmada mode: a policy naming
gleaner-scheduler, members labelled by the hub's Karmada Cluster objects; the application's
ResourceBinding gets the member its labels allow. A PyTorchJob asking for GPUs lands in the
member whose Nodes have them free, and the pods its training operator creates there are bound
to the nodes reserved for their roles.

Usage: fleet_e2e_test.py --bin-dir BUILD/bin   (exit 77: binary missing)"""

import json
import os
import sys
import tempfile
import time
import unittest
import urllib.error
import urllib.request

from kubernetes import client
from kubernetes.client.rest import ApiException

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from e2e_harness import Proc, deadline_loop, node_report, run_with_bin_dir  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
APISERVER = os.path.join(HERE, "..", "apiserver", "apiserver.py")
BIN_DIR = None
SPARK = ("sparkoperator.k8s.io", "v1beta2")
ACK_POLICY = "policy.one.alibabacloud.com"
TIMEOUT = 2  # --driver-start-timeout, seconds


def post(url, body):
    req = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST",
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=5) as r:
            return r.status
    except urllib.error.HTTPError as e:
        return e.code


def spark_pi():
    """The seeds' spark-pi, as the ACK One guide submits it to the Fleet instance."""
    section = {"coreLimit": "1000m", "cores": 1, "priorityClassName": "low-priority",
               "template": {"metadata": {"annotations": {
                   "sparkoperator.k8s.io/koordinator-colocation": "true"}}}}
    return {"apiVersion": "sparkoperator.k8s.io/v1beta2", "kind": "SparkApplication",
            "metadata": {"name": "spark-pi", "namespace": "spark"},
            "spec": {"type": "Scala", "mode": "cluster", "sparkVersion": "3.5.4",
                     "mainClass": "org.apache.spark.examples.SparkPi",
                     "mainApplicationFile":
                         "local:///opt/spark/examples/jars/spark-examples_2.12-3.5.4.jar",
                     "arguments": ["50000"], "restartPolicy": {"type": "Never"},
                     "driver": dict(section, memory="512m"),
                     "executor": dict(section, memory="1g", instances=1)}}


def named_app(name, ns):
    app = spark_pi()
    app["metadata"] = {"name": name, "namespace": ns}
    return app


def seeds_policy():
    return {"apiVersion": ACK_POLICY + "/v1alpha1", "kind": "PropagationPolicy",
            "metadata": {"name": "sparkapp-policy", "namespace": "spark"},
            "spec": {"preserveResourcesOnDeletion": False, "propagateDeps": True,
                     "placement": {"clusterAffinity": {"clusterNames": ["m1", "m2", "m3"]},
                                   "replicaScheduling": {"replicaSchedulingType": "Divided",
                                                         "customSchedulingType": "Gang"}},
                     "resourceSelectors": [{"apiVersion": "sparkoperator.k8s.io/v1beta2",
                                            "kind": "SparkApplication"}]}}


class Fleet(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory(prefix="gleaner-fleet-")
        self.procs, self.apis, self.kubeconfigs = [], {}, {}
        for name in ("hub", "m1", "m2", "m3"):
            api = self.start("apiserver-" + name,
                             ["/usr/bin/python3", APISERVER, "--port", "0"], stdin=True)
            url = "http://127.0.0.1:%s" % api.wait_line(r"ready port=(\d+)", 20).group(1)
            config = client.Configuration(host=url)
            self.apis[name] = client.ApiClient(config)
            path = os.path.join(self.tmp.name, name + ".kubeconfig")
            with open(path, "w") as f:
                f.write("apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: "
                        "%s}}]\nusers: [{name: u, user: {}}]\ncontexts: [{name: x, context: "
                        "{cluster: c, user: u}}]\ncurrent-context: x\n" % url)
            self.kubeconfigs[name] = path
        for m in ("m1", "m2", "m3"):
            client.CoreV1Api(self.apis[m]).create_node(
                client.V1Node(metadata=client.V1ObjectMeta(name=m + "-n1")))
        client.SchedulingV1Api(self.apis["hub"]).create_priority_class(client.V1PriorityClass(
            metadata=client.V1ObjectMeta(name="low-priority"), value=-1000))
        binary = os.path.join(BIN_DIR, "gleaner-scheduler")
        argv = [binary, "run", "--listen", "127.0.0.1:0", "--report-auth", "none",
                "--tick-ms", "50", "--driver-start-timeout", str(TIMEOUT),
                "--hub", "hub=" + self.kubeconfigs["hub"], "--hub-policy-group", ACK_POLICY]
        for m in ("m1", "m2", "m3"):
            argv += ["--cluster", "%s=%s" % (m, self.kubeconfigs[m])]
        sched = self.start("scheduler", argv)
        self.sched = "http://127.0.0.1:" + sched.wait_line(r"listening on port (\d+)", 20).group(1)
        self.seq = 0
        # Batch capacity as the members' agents report it: m1 is the best fit for spark-pi
        # (1 driver + 1 executor: 2 CPUs), m3 too small.
        for m, cpu in (("m1", 3000), ("m2", 8000), ("m3", 1000)):
            self.report(m, cpu)

    def start(self, name, argv, stdin=False):
        p = Proc(name, argv, self.tmp.name, stdin=stdin)
        self.procs.append(p)
        return p

    def tearDown(self):
        for api in self.apis.values():
            api.close()
            api.rest_client.pool_manager.clear()
        for p in reversed(self.procs):
            p.stop()
        if hasattr(self, "_outcome") and any(
                e for _, e in getattr(self._outcome, "errors", []) if e):
            for p in self.procs:
                print("---- %s\n%s" % (p.name, p.text()[-3000:]))
        self.tmp.cleanup()

    def report(self, member, cpu_milli):
        self.seq += 1
        self.assertEqual(post(self.sched + "/api/v1/reports",
                              node_report(member + "-n1", self.seq, "fleet-e2e", cpu_milli,
                                          16 << 30, cluster=member)), 200)

    def apps(self, cluster):
        return client.CustomObjectsApi(self.apis[cluster])

    def app(self, cluster, kind=SPARK + ("spark", "sparkapplications", "spark-pi")):
        """The object (group, version, namespace, plural, name) in `cluster`; None: absent."""
        try:
            return self.apps(cluster).get_namespaced_custom_object(*kind)
        except ApiException as e:
            if e.status == 404:
                return None
            raise

    def wait(self, what, predicate, timeout=15):
        for _ in deadline_loop(timeout, 0.05):
            if predicate():
                return
        self.fail("not within %ss: %s" % (timeout, what))

    def set_state(self, cluster, state):
        self.apps(cluster).patch_namespaced_custom_object_status(
            *SPARK, "spark", "sparkapplications", "spark-pi",
            {"status": {"applicationState": {"state": state}}})

    def hub_state(self):
        obj = self.app("hub") or {}
        return obj.get("status", {}).get("applicationState", {}).get("state")

    def placement(self):
        obj = self.app("hub") or {}
        return obj.get("metadata", {}).get("annotations", {}).get("gleaner.io/placement")

    def placed(self, ns, name):
        try:
            obj = self.apps("hub").get_namespaced_custom_object(*SPARK, ns, "sparkapplications",
                                                                name)
        except ApiException:
            return None
        return obj["metadata"].get("annotations", {}).get("gleaner.io/placement")

    def test_two_tenants_borrow_and_reclaim_through_the_hubs_quota_tree(self):
        # The hub's ElasticQuotaTree: tenant-a (namespace spark-a) is guaranteed 2 CPUs,
        # tenant-b (spark-b) 4; each may borrow up to 8. Every SparkApplication goes to any
        # member (a ClusterPropagationPolicy). Members: m1 takes one spark-pi (2 CPUs),
        # m2 two; m3 none.
        for ns in ("spark-a", "spark-b"):
            client.CoreV1Api(self.apis["hub"]).create_namespace(
                client.V1Namespace(metadata=client.V1ObjectMeta(name=ns)))
        self.report("m2", 4000)
        tree = {"apiVersion": "scheduling.sigs.k8s.io/v1beta1", "kind": "ElasticQuotaTree",
                "metadata": {"name": "elasticquotatree", "namespace": "kube-system"},
                "spec": {"root": {"name": "root", "max": {"cpu": 40, "memory": "40Gi"},
                                  "min": {"cpu": 40, "memory": "40Gi"}, "children": [
                    {"name": "tenant-a", "namespaces": ["spark-a"],
                     "min": {"cpu": 2, "memory": "4Gi"}, "max": {"cpu": 8, "memory": "16Gi"}},
                    {"name": "tenant-b", "namespaces": ["spark-b"],
                     "min": {"cpu": 4, "memory": "8Gi"}, "max": {"cpu": 8, "memory": "16Gi"}}]}}}
        self.apps("hub").create_namespaced_custom_object(
            "scheduling.sigs.k8s.io", "v1beta1", "kube-system", "elasticquotatrees", tree)
        cpp = seeds_policy()
        cpp["kind"] = "ClusterPropagationPolicy"
        cpp["metadata"] = {"name": "all-spark"}
        self.apps("hub").create_cluster_custom_object(ACK_POLICY, "v1alpha1",
                                                      "clusterpropagationpolicies", cpp)
        # tenant-a fills the fleet: 6 CPUs, 4 of them borrowed beyond its min.
        a_apps = ["a-1", "a-2", "a-3"]
        for name in a_apps:
            self.apps("hub").create_namespaced_custom_object(*SPARK, "spark-a",
                                                             "sparkapplications",
                                                             named_app(name, "spark-a"))
        self.wait("tenant-a's three placed",
                  lambda: all(self.placed("spark-a", n) for n in a_apps))
        # tenant-b, within its guaranteed min, finds no room: tenant-a's borrowed quota is
        # reclaimed (its most recently admitted application), and tenant-b's runs there.
        self.apps("hub").create_namespaced_custom_object(*SPARK, "spark-b", "sparkapplications",
                                                         named_app("b-1", "spark-b"))
        self.wait("tenant-b placed", lambda: self.placed("spark-b", "b-1") is not None)
        self.wait("one of tenant-a's unplaced",
                  lambda: sum(1 for n in a_apps if self.placed("spark-a", n)) == 2)
        waiting = [n for n in a_apps if not self.placed("spark-a", n)]
        events = client.CoreV1Api(self.apis["hub"]).list_namespaced_event("spark-a").items
        self.assertTrue(any(e.reason == "GleanerReclaimed" and e.involved_object.name in waiting
                            and "preempted" in e.message for e in events),
                        [(e.reason, e.message) for e in events])
        member = self.placed("spark-b", "b-1")

        def copies(name):
            return [m for m in ("m1", "m2", "m3") if name in [
                o["metadata"]["name"] for o in self.apps(m).list_namespaced_custom_object(
                    *SPARK, "spark-a", "sparkapplications")["items"]]]
        self.wait("the reclaimed one's copy deleted", lambda: not copies(waiting[0]))
        self.assertEqual(len(copies(a_apps[0]) + copies(a_apps[1]) + copies(a_apps[2])), 2)
        print("tenant-b placed into %s; tenant-a's %s reclaimed and waiting" % (member, waiting))

    def test_spark_pi_runs_where_it_fits_and_moves_when_its_driver_cannot_start(self):
        self.apps("hub").create_namespaced_custom_object(
            ACK_POLICY, "v1alpha1", "spark", "propagationpolicies", seeds_policy())
        started = time.monotonic()
        self.apps("hub").create_namespaced_custom_object(*SPARK, "spark", "sparkapplications",
                                                         spark_pi())
        self.wait("a copy in m1", lambda: self.app("m1") is not None)
        placed = time.monotonic()
        print("hub -> copy in the best-fit member: %.2f s" % (placed - started))
        self.assertIsNone(self.app("m2"))
        self.assertIsNone(self.app("m3"))
        self.wait("placement m1 recorded on the hub", lambda: self.placement() == "m1")
        copy = self.app("m1")
        self.assertEqual(copy["metadata"]["annotations"]["gleaner.io/origin-cluster"], "hub")
        self.assertEqual(copy["spec"], dict(spark_pi()["spec"], suspend=False))

        # m1's operator creates the driver; an LS surge there leaves it Pending.
        client.CoreV1Api(self.apis["m1"]).create_namespaced_pod("spark", {
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "spark-pi-driver", "labels": {
                "spark-role": "driver", "sparkoperator.k8s.io/app-name": "spark-pi"}},
            "spec": {"schedulerName": "gleaner-scheduler",
                     "containers": [{"name": "spark-kubernetes-driver", "image": "spark"}]}})
        self.set_state("m1", "SUBMITTED")
        self.wait("SUBMITTED on the hub", lambda: self.hub_state() == "SUBMITTED")
        # Past the driver start timeout: reclaimed from m1, placed into m2.
        self.wait("a copy in m2", lambda: self.app("m2") is not None, timeout=TIMEOUT + 15)
        moved = time.monotonic() - placed
        print("placed in m1 -> copy in m2: %.2f s (driver start timeout %d s)" % (moved, TIMEOUT))
        # The core counts whole seconds: the timeout ends between TIMEOUT-1 and TIMEOUT s.
        self.assertGreaterEqual(moved, TIMEOUT - 1, "reclaimed before its timeout")
        self.wait("the copy in m1 deleted", lambda: self.app("m1") is None)
        self.wait("the driver in m1 deleted", lambda: not client.CoreV1Api(
            self.apis["m1"]).list_namespaced_pod("spark").items)
        self.wait("placement m2 on the hub", lambda: self.placement() == "m2")
        self.assertIsNone(self.app("m3"), "m3 is too small")
        events = client.CoreV1Api(self.apis["hub"]).list_namespaced_event("spark").items
        self.assertIn("GleanerReclaimed", [e.reason for e in events])

        # m2's operator runs it to the end; the hub shows each state.
        for state in ("RUNNING", "COMPLETED"):
            self.set_state("m2", state)
            self.wait(state + " on the hub", lambda s=state: self.hub_state() == s)

        self.apps("hub").delete_namespaced_custom_object(*SPARK, "spark", "sparkapplications",
                                                         "spark-pi")
        self.wait("the copy in m2 deleted with the hub object", lambda: self.app("m2") is None)

    def test_karmada_mode_writes_the_binding_for_a_member_chosen_by_cluster_labels(self):
        # Karmada's Cluster objects on the hub: m1 (the best fit) serves online traffic only.
        for m, pool in (("m1", "online"), ("m2", "batch"), ("m3", "batch")):
            self.apps("hub").create_cluster_custom_object(
                "cluster.karmada.io", "v1alpha1", "clusters",
                {"apiVersion": "cluster.karmada.io/v1alpha1", "kind": "Cluster",
                 "metadata": {"name": m, "labels": {"pool": pool}},
                 "spec": {"syncMode": "Push", "apiEndpoint": "https://%s.example" % m}})
        policy = seeds_policy()
        policy["spec"]["schedulerName"] = "gleaner-scheduler"
        policy["spec"]["placement"]["clusterAffinity"] = {
            "labelSelector": {"matchLabels": {"pool": "batch"}}}
        self.apps("hub").create_namespaced_custom_object(
            ACK_POLICY, "v1alpha1", "spark", "propagationpolicies", policy)
        hub_obj = self.apps("hub").create_namespaced_custom_object(
            *SPARK, "spark", "sparkapplications", spark_pi())
        # Karmada's detector binds the template to the policy's scheduler.
        work = ("work.karmada.io", "v1alpha2")
        self.apps("hub").create_namespaced_custom_object(*work, "spark", "resourcebindings", {
            "apiVersion": "work.karmada.io/v1alpha2", "kind": "ResourceBinding",
            "metadata": {"name": "spark-pi-sparkapplication", "namespace": "spark"},
            "spec": {"resource": {"apiVersion": "sparkoperator.k8s.io/v1beta2",
                                  "kind": "SparkApplication", "namespace": "spark",
                                  "name": "spark-pi", "uid": hub_obj["metadata"]["uid"]},
                     "schedulerName": "gleaner-scheduler",
                     "placement": policy["spec"]["placement"]}})

        def bound():
            b = self.apps("hub").get_namespaced_custom_object(
                *work, "spark", "resourcebindings", "spark-pi-sparkapplication")
            return [c["name"] for c in b["spec"].get("clusters") or []], b

        def scheduled():
            # The status is written after spec.clusters, in a request of its own (as Karmada's
            # scheduler writes them): the binding is scheduled once both are.
            clusters, b = bound()
            status = b.get("status") or {}
            return clusters and status.get("schedulerObservedGeneration") == \
                b["metadata"]["generation"]
        self.wait("the binding names a member and shows it scheduled", scheduled)
        clusters, binding = bound()
        self.assertEqual(clusters, ["m2"], "m1 is labelled online, m3 is too small")
        self.assertEqual([(c["type"], c["status"]) for c in binding["status"]["conditions"]],
                         [("Scheduled", "True")])
        self.assertEqual(self.placement(), "m2")
        for m in ("m1", "m2", "m3"):
            self.assertIsNone(self.app(m), "Karmada propagates it, not the scheduler")

        # Karmada's execution controller creates it in m2, from the hub object.
        hub_obj = self.app("hub")
        self.apps("m2").create_namespaced_custom_object(*SPARK, "spark", "sparkapplications", {
            "apiVersion": "sparkoperator.k8s.io/v1beta2", "kind": "SparkApplication",
            "metadata": {"name": "spark-pi", "namespace": "spark",
                         "annotations": hub_obj["metadata"]["annotations"]},
            "spec": hub_obj["spec"]})
        self.set_state("m2", "RUNNING")
        self.wait("RUNNING on the hub", lambda: self.hub_state() == "RUNNING")

    def test_a_pytorchjob_with_gpus_lands_where_gpus_are_free(self):
        # Only m2's node has GPUs (m1 fits the job's cpu better).
        for m, gpus in (("m1", 0), ("m2", 2), ("m3", 0)):
            allocatable = {"cpu": "8", "memory": "32Gi"}
            if gpus:
                allocatable["nvidia.com/gpu"] = str(gpus)
            client.CoreV1Api(self.apis[m]).patch_node_status(
                m + "-n1", {"status": {"allocatable": allocatable}})
        policy = seeds_policy()
        policy["metadata"] = {"name": "training", "namespace": "ml"}
        policy["spec"]["resourceSelectors"] = [{"apiVersion": "kubeflow.org/v1",
                                                "kind": "PyTorchJob"}]
        self.apps("hub").create_namespaced_custom_object(
            ACK_POLICY, "v1alpha1", "ml", "propagationpolicies", policy)

        def replica_spec():
            return {"replicas": 1, "restartPolicy": "OnFailure", "template": {"spec": {
                "schedulerName": "gleaner-scheduler",
                "priorityClassName": "low-priority",
                "containers": [{"name": "pytorch", "image": "pytorch/pytorch",
                                "resources": {"requests": {"cpu": "1", "memory": "2Gi"},
                                              "limits": {"nvidia.com/gpu": "1"}}}]}}}
        kubeflow = ("kubeflow.org", "v1")
        self.apps("hub").create_namespaced_custom_object(*kubeflow, "ml", "pytorchjobs", {
            "apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob",
            "metadata": {"name": "mnist", "namespace": "ml"},
            "spec": {"pytorchReplicaSpecs": {"Master": replica_spec(),
                                             "Worker": replica_spec()}}})

        def job(cluster):
            return self.app(cluster, kubeflow + ("ml", "pytorchjobs", "mnist"))
        self.wait("the copy in m2", lambda: job("m2") is not None)
        self.assertIsNone(job("m1"), "m1 has no GPU")
        self.assertEqual(job("hub")["metadata"]["annotations"]["gleaner.io/placement"], "m2")

        # m2's training operator creates the master and the worker.
        core = client.CoreV1Api(self.apis["m2"])
        for role in ("master", "worker"):
            core.create_namespaced_pod("ml", client.V1Pod(
                metadata=client.V1ObjectMeta(name="mnist-%s-0" % role, labels={
                    "training.kubeflow.org/job-name": "mnist",
                    "training.kubeflow.org/operator-name": "pytorchjob-controller",
                    "training.kubeflow.org/replica-type": role,
                    "training.kubeflow.org/replica-index": "0"}),
                spec=client.V1PodSpec(scheduler_name="gleaner-scheduler", containers=[
                    client.V1Container(name="pytorch", image="pytorch/pytorch")])))
        for role in ("master", "worker"):
            self.wait("mnist-%s-0 bound" % role, lambda r=role: core.read_namespaced_pod(
                "mnist-%s-0" % r, "ml").spec.node_name == "m2-n1")

        self.apps("m2").patch_namespaced_custom_object_status(
            *kubeflow, "ml", "pytorchjobs", "mnist",
            {"status": {"conditions": [{"type": "Created", "status": "True"},
                                       {"type": "Running", "status": "True"}]}})
        self.wait("Running on the hub", lambda: job("hub")["metadata"]["annotations"].get(
            "gleaner.io/remote-state") == "Running")


if __name__ == "__main__":
    run_with_bin_dir(globals(), "gleaner-scheduler")
