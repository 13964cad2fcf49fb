#!/usr/bin/python3
"""gleaner-scheduler as Karmada's scheduler-estimator, driven by a client generated from the
project's .proto files with python3-grpcio and python3-protobuf (protoc --python_out), after
node reports for a member cluster: MaxAvailableComponentSets for a Spark driver + N executors
equals the number of such applications `gleaner-scheduler simulate` places on the same nodes,
for several cluster shapes; both quantity encodings (resourceRequestBytes, Karmada >= 1.18, and
the typed map of <= 1.17) give the same answer; MaxAvailableReplicas counts single pods; node
affinity, selectors and tolerations narrow the answer as placement does; node affinity's Gt and
Lt count the nodes whose label, read as an integer, is above or below the bound (labels from
a member's Nodes, served by the test API server); a cluster with no reports, a stale one, a
class that is not batch and a GPU request get -1;
a malformed quantity gets INVALID_ARGUMENT; assumed workloads are subtracted; the calls are
counted in /metrics. (Taints and tolerations: the C++ tests, as nodes known from reports
alone carry no taints.)

Usage: karmada_estimator_test.py --bin-dir BUILD/bin   (exit 77: binary or grpcio missing)"""

import importlib
import json
import os
import subprocess
import sys
import tempfile
import unittest
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "e2e"))
from e2e_harness import (Proc, deadline_loop, make_certificates, node_report,  # noqa: E402
                         run_with_bin_dir, write_kubeconfig)

APISERVER = os.path.join(HERE, "..", "apiserver", "apiserver.py")
PROTO_DIR = os.path.join(HERE, "..", "..", "scheduler", "estimator", "proto")
SERVICE = "/github.com.karmada_io.karmada.pkg.estimator.service.Estimator/"
BIN_DIR = None
GI = 1 << 30

try:
    import grpc
except ImportError:  # pragma: no cover - the skip path
    grpc = None


def generate_stubs(out_dir):
    """The message classes, from the same .proto files the server is built from."""
    subprocess.run(["protoc", "-I", PROTO_DIR, "--python_out", out_dir, "estimator.proto",
                    "kube_wire.proto"], check=True)
    sys.path.insert(0, out_dir)
    return importlib.import_module("estimator_pb2"), importlib.import_module("kube_wire_pb2")


# Cluster shapes: (nodes as (name, batch cpu milli, batch memory)), the Spark shape
# (driver cpu milli, driver memory, executor cpu milli, executor memory, executors).
SHAPES = {
    "member-even": ([("e%d" % i, 4000, 16 * GI) for i in range(6)],
                    (1000, 2 * GI, 1000, 2 * GI, 3)),
    "member-uneven": ([("u1", 16000, 8 * GI), ("u2", 2500, 32 * GI), ("u3", 7000, 20 * GI),
                       ("u4", 1000, 1 * GI), ("u5", 9500, 40 * GI)],
                      (1500, 3 * GI, 2000, 4 * GI, 4)),
    "member-memory-bound": ([("m%d" % i, 32000, (6 + i) * GI) for i in range(8)],
                            (500, 1536 << 20, 250, 2 * GI, 7)),
}


class EstimatorCase(unittest.TestCase):
    """A scheduler serving the estimator, and the calls to it; no tests of its own."""

    def scheduler_args(self):
        return []

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory(prefix="gleaner-estimator-")
        cls.pb, cls.kw = generate_stubs(cls.tmp.name)

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def setUp(self):
        self.procs = []
        self.sched = Proc("scheduler", [
            os.path.join(BIN_DIR, "gleaner-scheduler"), "run", "--listen", "127.0.0.1:0",
            "--report-auth", "none", "--estimator-listen", "127.0.0.1:0", "--stale-after", "3",
            "--tick-ms", "50"] + self.scheduler_args(), self.tmp.name)
        self.procs.append(self.sched)
        self.http = "http://127.0.0.1:" + self.sched.wait_line(r"listening on port (\d+)",
                                                              20).group(1)
        port = self.sched.wait_line(r"Karmada estimator on port (\d+)", 20).group(1)
        self.channel = grpc.insecure_channel("127.0.0.1:" + port)
        self.seq = 0

    def tearDown(self):
        self.channel.close()
        for p in reversed(self.procs):
            p.stop()
        if any(e for _, e in getattr(self._outcome, "errors", []) if e):
            print("---- scheduler\n" + self.sched.text()[-3000:])

    # --- plumbing ---
    def call(self, method, request, response_type):
        stub = self.channel.unary_unary(SERVICE + method,
                                        request_serializer=lambda m: m.SerializeToString(),
                                        response_deserializer=response_type.FromString)
        return stub(request, timeout=3)

    def post(self, node, cluster, cpu, memory):
        self.seq += 1
        req = urllib.request.Request(self.http + "/api/v1/reports",
                                     data=json.dumps(node_report(
                                         node, self.seq, "e-" + node, cpu, memory, cluster,
                                         (64000, 256 * GI))).encode(),
                                     method="POST", headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=5) as r:
            self.assertEqual(r.status, 200)

    def quantity(self, text):
        return self.kw.Quantity(string=text).SerializeToString()

    def requirements(self, cpu, memory, legacy=False, priority="koord-batch", message=None):
        r = message or self.pb.ComponentReplicaRequirements()
        r.priorityClassName = priority
        target = r.legacyResourceRequest if legacy else r.resourceRequestBytes
        target["cpu"] = self.quantity(cpu)
        target["memory"] = self.quantity(memory)
        return r

    def spark_set(self, cluster, shape, legacy=False):
        dc, dm, ec, em, n = shape
        req = self.pb.MaxAvailableComponentSetsRequest(cluster=cluster, namespace="spark")
        req.components.add(name="driver", replicas=1).replicaRequirements.CopyFrom(
            self.requirements("%dm" % dc, str(dm), legacy))
        req.components.add(name="executor", replicas=n).replicaRequirements.CopyFrom(
            self.requirements("%dm" % ec, str(em), legacy))
        return self.call("MaxAvailableComponentSets", req,
                         self.pb.MaxAvailableComponentSetsResponse).maxSets

    def simulated(self, cluster, nodes, shape, apps=200):
        """How many such applications the simulator admits at once on these nodes."""
        dc, dm, ec, em, n = shape
        scenario = {
            "clusters": [cluster],
            "nodes": [{"name": name, "cluster": cluster,
                       "batch": {"cpu": "%dm" % c, "memory": str(m)}} for name, c, m in nodes],
            "jobs": [{"name": "app-%d" % i, "submitAt": 0, "durationSeconds": 100000,
                      "driver": {"cpu": "%dm" % dc, "memory": str(dm)},
                      "executor": {"cpu": "%dm" % ec, "memory": str(em), "instances": n}}
                     for i in range(apps)]}
        path = os.path.join(self.tmp.name, cluster + ".json")
        with open(path, "w") as f:
            json.dump(scenario, f)
        out = subprocess.run([os.path.join(BIN_DIR, "gleaner-scheduler"), "simulate",
                              "--scenario", path], check=True, capture_output=True, text=True)
        jobs = json.loads(out.stdout)["jobs"]
        admitted = sum(1 for j in jobs if j.get("startedAt") == 0)
        self.assertLess(admitted, apps, "the scenario must hold more applications than fit")
        return admitted

    def replicas(self, cluster, cpu, memory, priority="koord-batch", claim=None, extra=None):
        req = self.pb.MaxAvailableReplicasRequest(cluster=cluster)
        r = req.replicaRequirements
        r.priorityClassName = priority
        r.resourceRequestBytes["cpu"] = self.quantity(cpu)
        r.resourceRequestBytes["memory"] = self.quantity(memory)
        for k, v in (extra or {}).items():
            r.resourceRequestBytes[k] = self.quantity(v)
        if claim is not None:
            r.nodeClaim.CopyFrom(claim)
        return self.call("MaxAvailableReplicas", req,
                         self.pb.MaxAvailableReplicasResponse).maxReplicas


class KarmadaEstimatorTest(EstimatorCase):
    # --- the tests ---
    def test_component_sets_equal_what_the_simulator_places(self):
        for cluster, (nodes, shape) in SHAPES.items():
            for name, cpu, memory in nodes:
                self.post(name, cluster, cpu, memory)
        for cluster, (nodes, shape) in SHAPES.items():
            expected = self.simulated(cluster, nodes, shape)
            self.assertGreater(expected, 0, cluster)
            self.assertEqual(self.spark_set(cluster, shape), expected, cluster)
            print("%s: %d whole Spark sets, as the simulator places" % (cluster, expected))
            self.assertEqual(self.spark_set(cluster, shape, legacy=True), expected,
                             cluster + ": the typed Quantity map of Karmada <= 1.17")

    def test_replicas_selectors_and_no_opinion(self):
        self.post("a1", "member-a", 4000, 8 * GI)  # 4 pods of 1 CPU / 2 GiB
        self.post("a2", "member-a", 2500, 16 * GI)  # 2
        self.assertEqual(self.replicas("member-a", "1", "2Gi"), 6)
        self.assertEqual(self.replicas("member-a", "500m", "4Gi"), 2 + 4)

        # Required node affinity and a node selector, in Kubernetes' protobuf encoding. A
        # node known from reports alone carries one label: its member cluster.
        def affinity(values, legacy=False):
            sel = self.kw.NodeSelector()
            sel.nodeSelectorTerms.add().matchExpressions.add(
                key="gleaner.io/cluster", operator="In", values=values)
            if legacy:
                return self.pb.NodeClaim(legacyNodeAffinity=sel.SerializeToString()), sel
            return self.pb.NodeClaim(nodeAffinityBytes=sel.SerializeToString()), sel

        self.assertEqual(self.replicas("member-a", "1", "2Gi", claim=affinity(["member-a"])[0]), 6)
        self.assertEqual(self.replicas("member-a", "1", "2Gi", claim=affinity(["b"])[0]), 0)
        self.assertEqual(self.replicas("member-a", "1", "2Gi", claim=affinity(["b"], True)[0]), 0,
                         "the typed NodeSelector of Karmada <= 1.17")
        claim = self.pb.NodeClaim(nodeSelector={"pool": "spark"})
        self.assertEqual(self.replicas("member-a", "1", "2Gi", claim=claim), 0)
        _, sel = affinity(["member-a"])
        sel.nodeSelectorTerms[0].matchExpressions.add(key="zone", operator="Gt", values=["1"])
        claim = self.pb.NodeClaim(nodeAffinityBytes=sel.SerializeToString())
        self.assertEqual(self.replicas("member-a", "1", "2Gi", claim=claim), 0,
                         "Gt on a label no node has: no node counts")

        self.assertEqual(self.replicas("member-a", "1", "2Gi", priority="koord-prod"), -1)
        self.assertEqual(self.replicas("member-a", "1", "2Gi", extra={"nvidia.com/gpu": "1"}), -1)
        self.assertEqual(self.replicas("member-nowhere", "1", "2Gi"), -1)

        with self.assertRaises(grpc.RpcError) as bad:
            req = self.pb.MaxAvailableReplicasRequest(cluster="member-a")
            req.replicaRequirements.priorityClassName = "koord-batch"
            req.replicaRequirements.resourceRequestBytes["cpu"] = self.quantity("1.5.5")
            self.call("MaxAvailableReplicas", req, self.pb.MaxAvailableReplicasResponse)
        self.assertEqual(bad.exception.code(), grpc.StatusCode.INVALID_ARGUMENT)
        self.assertIn("replicaRequirements[cpu]", bad.exception.details())

        # Reports stop: after --stale-after the cluster gets no opinion.
        for _ in deadline_loop(15, 0.2):
            if self.replicas("member-a", "1", "2Gi") == -1:
                break
        else:
            self.fail("a cluster whose reports stopped still gets an answer")

        with urllib.request.urlopen(self.http + "/metrics", timeout=5) as r:
            metrics = r.read().decode()
        self.assertRegex(metrics, r'gleaner_scheduler_estimator_calls_total\{method='
                                  r'"MaxAvailableReplicas",outcome="answered"\} [1-9]')
        self.assertRegex(metrics, r'gleaner_scheduler_estimator_calls_total\{method='
                                  r'"MaxAvailableReplicas",outcome="invalid"\} 1\b')

    def test_assumed_workloads_are_subtracted_and_unschedulable_replicas_answered(self):
        self.post("t1", "member-t", 8000, 32 * GI)
        req = self.pb.MaxAvailableReplicasRequest(cluster="member-t")
        r = req.replicaRequirements
        r.priorityClassName = "koord-batch"
        r.resourceRequestBytes["cpu"] = self.quantity("1")
        r.resourceRequestBytes["memory"] = self.quantity("1Gi")
        self.assertEqual(self.call("MaxAvailableReplicas", req,
                                   self.pb.MaxAvailableReplicasResponse).maxReplicas, 8)
        assumed = req.assumedWorkloads.add(namespace="spark")
        c = assumed.components.add(name="spark-pi", replicas=3)
        self.requirements("1", "1Gi", message=c.replicaRequirements)
        self.assertEqual(self.call("MaxAvailableReplicas", req,
                                   self.pb.MaxAvailableReplicasResponse).maxReplicas, 5)

        unsched = self.pb.UnschedulableReplicasRequest(
            cluster="member-t", unschedulableThreshold=300 * 10**9,
            resource=self.pb.ObjectReference(apiVersion="sparkoperator.k8s.io/v1beta2",
                                             kind="SparkApplication", namespace="spark",
                                             name="nothing-here"))
        self.assertEqual(self.call("GetUnschedulableReplicas", unsched,
                                   self.pb.UnschedulableReplicasResponse).unschedulableReplicas, 0)


class KarmadaEstimatorNodeLabelsTest(EstimatorCase):
    """A member whose Nodes (in its API server) carry labels: node affinity's Gt and Lt
    compare them as integers, as kube-scheduler does."""

    NODES = {"l1": {"gpu-count": "2"}, "l2": {"gpu-count": "1"}, "l3": {"gpu-count": "8x"},
             "l4": {}}

    def setUp(self):
        self.procs = []
        api = Proc("apiserver", ["/usr/bin/python3", APISERVER, "--port", "0"], self.tmp.name,
                   stdin=True)
        self.procs.append(api)
        url = "http://127.0.0.1:%s" % api.wait_line(r"ready port=(\d+)", 20).group(1)
        for name, labels in self.NODES.items():
            node = {"apiVersion": "v1", "kind": "Node",
                    "metadata": {"name": name, "labels": labels}}
            req = urllib.request.Request(url + "/api/v1/nodes", data=json.dumps(node).encode(),
                                         method="POST",
                                         headers={"Content-Type": "application/json"})
            with urllib.request.urlopen(req, timeout=5) as r:
                self.assertEqual(r.status, 201)
        self.kubeconfig = write_kubeconfig(os.path.join(self.tmp.name, "member-l.kubeconfig"),
                                           url)
        procs = self.procs
        super().setUp()
        self.procs = procs + self.procs

    def scheduler_args(self):
        return ["--cluster", "member-l=" + self.kubeconfig]

    def claim(self, operator, values, key="gpu-count"):
        sel = self.kw.NodeSelector()
        sel.nodeSelectorTerms.add().matchExpressions.add(key=key, operator=operator,
                                                         values=values)
        return self.pb.NodeClaim(nodeAffinityBytes=sel.SerializeToString())

    def test_gt_and_lt_count_the_nodes_whose_label_is_above_or_below(self):
        for name in self.NODES:
            self.post(name, "member-l", 2000, 4 * GI)  # 2 pods of 1 CPU / 2 GiB each
        # The Nodes' labels come through the member's informer: wait until the three
        # labelled nodes count.
        for _ in deadline_loop(15, 0.1):
            if self.replicas("member-l", "1", "2Gi", claim=self.claim("Exists", [])) == 6:
                break
        else:
            self.fail("the member's Node labels never reached the estimator")
        self.assertEqual(self.replicas("member-l", "1", "2Gi", claim=self.claim("Gt", ["1"])), 2,
                         "Gt 1: l1 (2) alone; l2 (1) is not above, l3 (8x) is not an integer, "
                         "l4 has no label")
        self.assertEqual(self.replicas("member-l", "1", "2Gi", claim=self.claim("Lt", ["2"])), 2,
                         "Lt 2: l2 (1) alone")
        self.assertEqual(self.replicas("member-l", "1", "2Gi", claim=self.claim("Lt", ["9"])), 4,
                         "Lt 9: l1 and l2; l3's 8x is not 8")
        self.assertEqual(self.replicas("member-l", "1", "2Gi", claim=self.claim("Gt", ["2"])), 0)
        for values in ([], ["1", "2"], ["two"]):
            with self.assertRaises(grpc.RpcError) as bad:
                self.replicas("member-l", "1", "2Gi", claim=self.claim("Gt", values))
            self.assertEqual(bad.exception.code(), grpc.StatusCode.INVALID_ARGUMENT, values)
            self.assertIn("replicaRequirements.nodeClaim.nodeAffinityBytes.nodeSelectorTerms[0]"
                          ".matchExpressions[0].values", bad.exception.details())


class KarmadaEstimatorTlsTest(unittest.TestCase):
    """--estimator-tls-cert-dir: a client that trusts the CA gets answers; a plaintext one,
    karmada-scheduler's default, is refused."""

    def test_tls_answers_a_client_with_the_ca_and_refuses_plaintext(self):
        tmp = tempfile.TemporaryDirectory(prefix="gleaner-estimator-tls-")
        self.addCleanup(tmp.cleanup)
        pb, _ = generate_stubs(tmp.name)
        ca, tls = make_certificates(tmp.name)
        sched = Proc("scheduler", [
            os.path.join(BIN_DIR, "gleaner-scheduler"), "run", "--listen", "127.0.0.1:0",
            "--report-auth", "none", "--estimator-listen", "127.0.0.1:0",
            "--estimator-tls-cert-dir", tls], tmp.name)
        self.addCleanup(sched.stop)
        port = sched.wait_line(r"Karmada estimator on port (\d+) \(TLS\)", 20).group(1)
        with open(ca, "rb") as f:
            creds = grpc.ssl_channel_credentials(root_certificates=f.read())
        request = pb.MaxAvailableReplicasRequest(cluster="member-nowhere")

        def call(channel):
            stub = channel.unary_unary(
                SERVICE + "MaxAvailableReplicas",
                request_serializer=lambda m: m.SerializeToString(),
                response_deserializer=pb.MaxAvailableReplicasResponse.FromString)
            return stub(request, timeout=5).maxReplicas

        with grpc.secure_channel("127.0.0.1:" + port, creds,
                                 options=[("grpc.ssl_target_name_override", "localhost")]) as c:
            self.assertEqual(call(c), -1, "an unknown member: no opinion, over TLS")
        with grpc.insecure_channel("127.0.0.1:" + port) as plain:
            with self.assertRaises(grpc.RpcError) as refused:
                call(plain)
            self.assertEqual(refused.exception.code(), grpc.StatusCode.UNAVAILABLE)


if __name__ == "__main__":
    if grpc is None:
        print("SKIP: python3-grpcio is not installed")
        sys.exit(77)
    run_with_bin_dir(globals(), "gleaner-scheduler")
