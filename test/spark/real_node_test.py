#!/usr/bin/python3
"""A real node of the kubelet emulator (spark_emulator.py --real-nodes): pods bound to it get
kubelet's cgroups in a scratch hierarchy on the real cgroup filesystem and real processes
inside them; its kubelet API lists them; deleting them stops the processes and removes
the cgroups. Needs root (exit 77, skipped, otherwise)."""

import base64
import http.server
import json
import os
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import unittest
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "e2e"))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "apiserver"))
import scratch_cgroups  # noqa: E402
from e2e_harness import deadline_loop, make_certificates  # noqa: E402
from tls_server import serve_tls  # noqa: E402
from spark_emulator_harness import APISERVER, EMULATOR, FAST, GROUP, PLURAL, S, VERSION, \
    read_line  # noqa: E402

NS = "real"
TOKEN = "kubelet-reader-token"
BATCH_CPU, BATCH_MEMORY = "kubernetes.io/batch-cpu", "kubernetes.io/batch-memory"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class ColocationProfileWebhook:
    """Stands in for the colocation webhook (docs/colocation-webhook.md; Koordinator's
    ClusterColocationProfile mutation, pkg/webhook/pod/mutating/cluster_colocation_profile.go):
    Spark pods get their cpu/memory as kubernetes.io/batch-cpu (millicores) and batch-memory
    and the label koordinator.sh/qosClass=BE, which leaves them BestEffort."""

    def __init__(self, tls_dir):
        def mutate(pod):
            patch = [{"op": "add", "path": "/metadata/labels/koordinator.sh~1qosClass",
                      "value": "BE"}]
            for i, c in enumerate(pod["spec"]["containers"]):
                res = {}
                for kind in ("requests", "limits"):
                    given = (c.get("resources") or {}).get(kind) or {}
                    out = {k: v for k, v in given.items() if k not in ("cpu", "memory")}
                    if "cpu" in given:
                        out[BATCH_CPU] = str(int(float(str(given["cpu"]).rstrip("m")) * (
                            1 if str(given["cpu"]).endswith("m") else 1000)))
                    if "memory" in given:
                        out[BATCH_MEMORY] = given["memory"]
                    res[kind] = out
                patch.append({"op": "add", "path": "/spec/containers/%d/resources" % i,
                              "value": res})
            return patch

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802
                review = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                patch = mutate(review["request"]["object"])
                body = json.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                                   "response": {"uid": review["request"]["uid"], "allowed": True,
                                                "patchType": "JSONPatch",
                                                "patch": base64.b64encode(json.dumps(
                                                    patch).encode()).decode()}}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(os.path.join(tls_dir, "tls.crt"), os.path.join(tls_dir, "tls.key"))
        serve_tls(self.httpd, context)
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        self.port = self.httpd.server_address[1]


class RealNodeTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.procs = []
        cls.tmp = tempfile.mkdtemp(prefix="real-node-")
        cls.addClassCleanup(shutil.rmtree, cls.tmp, True)
        cls.scratch = scratch_cgroups.ScratchCgroups()
        cls.addClassCleanup(cls.remove_scratch)
        ca, tls = make_certificates(cls.tmp)
        cls.ca = ca
        cls.webhook = ColocationProfileWebhook(tls)
        cls.addClassCleanup(cls.webhook.httpd.shutdown)
        cls.api_proc = cls.start([APISERVER, "--port", "0", "--bookmark-interval", "0.5"])
        line = read_line(cls.api_proc, "the test API server")
        cls.server = "http://127.0.0.1:%s" % line.split("=")[1]
        with open(ca, "rb") as f:
            bundle = base64.b64encode(f.read()).decode()
        cls.call("POST", "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations", {
            "metadata": {"name": "colocation"}, "webhooks": [{
                "name": "colocation.gleaner.io", "admissionReviewVersions": ["v1"],
                "sideEffects": "None", "failurePolicy": "Fail",
                "clientConfig": {"url": "https://localhost:%d/mutate" % cls.webhook.port,
                                 "caBundle": bundle},
                "objectSelector": {"matchExpressions": [{"key": "spark-role",
                                                         "operator": "Exists"}]},
                "rules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"],
                           "resources": ["pods"]}]}]})
        cls.call("POST", "/api/v1/nodes", {"metadata": {"name": "n1"}})
        cls.call("PATCH", "/api/v1/nodes/n1/status", {"status": {"allocatable": {
            "cpu": "2", "memory": "8Gi", "pods": "110", BATCH_CPU: "2000",
            BATCH_MEMORY: "4Gi"}}}, "application/merge-patch+json")
        cls.log = os.path.join(cls.tmp, "emulator.log")
        with open(cls.log, "wb") as err:
            cls.emu = cls.start([EMULATOR, "--server", cls.server, "--namespace", NS,
                                 "--real-nodes", "n1", "--cgroup-root", cls.scratch.root,
                                 "--kubelet-tls-cert", os.path.join(tls, "tls.crt"),
                                 "--kubelet-tls-key", os.path.join(tls, "tls.key"),
                                 "--kubelet-token", TOKEN, "--exit-on-stdin-eof", "--verbose"],
                                stderr=err)
        line = read_line(cls.emu, "the emulator")
        assert line.startswith("kubelet node=n1 port="), line
        cls.kubelet_port = int(line.split("=")[-1])
        assert read_line(cls.emu, "the emulator") == "ready"
        cls.stop_binding = threading.Event()
        cls.addClassCleanup(cls.stop_binding.set)
        threading.Thread(target=cls.binder, daemon=True).start()

    @classmethod
    def start(cls, argv, stderr=subprocess.DEVNULL):
        proc = subprocess.Popen(["/usr/bin/python3"] + argv, stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=stderr)
        cls.procs.append(proc)
        return proc

    @classmethod
    def tearDownClass(cls):
        for proc in reversed(cls.procs):
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()

    @classmethod
    def remove_scratch(cls):
        for proc in cls.procs:  # a setUpClass that failed half way
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        cls.scratch.remove()
        if cls.scratch.exists():
            raise AssertionError("the scratch cgroups %s remain" % cls.scratch.bases)

    # --- the API server, the stand-in scheduler --------------------------------------------
    @classmethod
    def call(cls, method, path, body=None, content_type="application/json"):
        req = urllib.request.Request(cls.server + path, method=method, data=json.dumps(
            body).encode() if body is not None else None, headers={"Content-Type": content_type})
        with urllib.request.urlopen(req, timeout=10) as resp:
            return json.loads(resp.read() or b"null")

    @classmethod
    def binder(cls):
        while not cls.stop_binding.wait(0.05):
            try:
                pods = cls.call("GET", "/api/v1/namespaces/%s/pods" % NS)["items"]
                for pod in pods:
                    if not pod["spec"].get("nodeName") and pod["status"].get("phase") == "Pending":
                        cls.call("POST", "/api/v1/namespaces/%s/pods/%s/binding" % (
                            NS, pod["metadata"]["name"]), {
                            "apiVersion": "v1", "kind": "Binding",
                            "metadata": {"name": pod["metadata"]["name"]},
                            "target": {"apiVersion": "v1", "kind": "Node", "name": "n1"}})
            except Exception:  # noqa: BLE001 - gone or bound meanwhile; the next round sees
                pass

    def pods(self):
        return {p["metadata"]["name"]: p for p in self.call(
            "GET", "/api/v1/namespaces/%s/pods" % NS)["items"]}

    def wait_for(self, what, fn, timeout=20.0):
        last = None
        for _ in deadline_loop(timeout, 0.05):
            last = fn()
            if last:
                return last
        with open(self.log) as f:
            tail = "".join(f.readlines()[-30:])
        self.fail("timed out waiting for %s (last: %r)\nemulator log tail:\n%s" % (what, last,
                                                                                 tail))

    # --- cgroups ---------------------------------------------------------------------------
    def cg(self, relative, name, controller="cpu"):
        with open(os.path.join(self.scratch.root, controller, relative, name)) as f:
            return f.read().strip()

    def container_dir(self, pod, qos_dir):
        status = pod["status"]["containerStatuses"][0]
        return "%s/pod%s/%s" % (qos_dir, pod["metadata"]["uid"],
                                status["containerID"].split("://")[1])

    def assert_inside(self, relative):
        """The container cgroup holds a process, and /proc says it is in that cgroup."""
        pids = self.cg(relative, "cgroup.procs").split()
        self.assertTrue(pids, relative + " holds no process")
        with open("/proc/%s/cgroup" % pids[0]) as f:
            lines = f.read().splitlines()
        for controller in ("cpu", "memory"):
            path = next(line.split(":", 2)[2] for line in lines
                        if controller in line.split(":")[1].split(","))
            self.assertTrue(path.endswith("/" + relative), (controller, path, relative))
        return int(pids[0])

    def kubelet_pods(self, token=TOKEN):
        context = ssl.create_default_context(cafile=self.ca)
        req = urllib.request.Request("https://localhost:%d/pods" % self.kubelet_port,
                                     headers={"Authorization": "Bearer " + token} if token
                                     else {})
        with urllib.request.urlopen(req, timeout=10, context=context) as resp:
            return json.loads(resp.read())

    # --- the tests -------------------------------------------------------------------------
    def test_an_evicted_executor_decommissions_on_a_real_node(self):
        """With spark.decommission.enabled, the executor pod's preStop hook (Spark's
        decom.sh) runs when it is evicted: its process gets SIGPWR, finishes the task it
        has and exits 0 inside the grace period, before any SIGTERM."""
        self.call("POST", "/apis/%s/%s/namespaces/%s/%s" % (GROUP, VERSION, NS, PLURAL), {
            "apiVersion": "%s/%s" % (GROUP, VERSION), "kind": "SparkApplication",
            "metadata": {"name": "drain", "annotations": {S + "task-seconds": "1"}},
            "spec": {"type": "Scala", "mode": "cluster", "image": "spark:3.5.5",
                     "mainClass": "org.apache.spark.examples.SparkPi",
                     "mainApplicationFile": "local:///opt/spark/examples/jars/x.jar",
                     "sparkVersion": "3.5.5",
                     "sparkConf": dict(FAST, **{"spark.decommission.enabled": "true"}),
                     # Half a core: its replacement fits beside it while it decommissions
                     # (n1's batch-cpu is 2000, the driver's 1000).
                     "executor": {"instances": 1, "cores": 1, "coreRequest": "500m",
                                  "memory": "512m"}}})
        self.addCleanup(self.wait_for, "drain's pods gone", lambda: not self.pods())
        self.addCleanup(self.call, "DELETE", "/apis/%s/%s/namespaces/%s/%s/drain" % (
            GROUP, VERSION, NS, PLURAL))
        executor = self.wait_for("drain's executor running", lambda: next((
            p for p in self.pods().values()
            if (p["metadata"].get("labels") or {}).get("spark-role") == "executor" and
            p["status"].get("phase") == "Running"), None))
        name = executor["metadata"]["name"]
        container = executor["spec"]["containers"][0]
        self.assertEqual(container["lifecycle"]["preStop"]["exec"]["command"], ["/opt/decom.sh"])
        be = self.container_dir(executor, "kubepods/besteffort")
        pid = self.assert_inside(be)
        # Working a task: its process has started and set up its signal handling, as a
        # registered executor's JVM has.
        self.wait_for("0.2 s of CPU in the executor's cgroup", lambda: int(self.cg(
            be, "cpuacct.usage", "cpuacct")) >= 200_000_000)
        self.call("POST", "/api/v1/namespaces/%s/pods/%s/eviction" % (NS, name), {
            "apiVersion": "policy/v1", "kind": "Eviction",
            "metadata": {"name": name, "namespace": NS}})
        def stopped():
            with open(self.log) as f:
                log = f.read()
            return log if "%s of %s exited with" % (container["name"], name) in log else None
        log = self.wait_for("the executor's exit during its preStop hook", stopped)
        self.assertFalse(os.path.exists("/proc/%d" % pid))
        self.assertIn("%s of %s exited with 0 during its preStop hook" % (container["name"], name),
                      log)
        self.assertNotIn("%s of %s outlived" % (container["name"], name), log)
        self.assertNotIn("driver-drain-driver: executor 1 lost mid-task", log)

    def test_pods_run_for_real_in_kubelet_cgroups(self):
        web_port = free_port()
        self.call("POST", "/api/v1/namespaces/%s/pods" % NS, {
            "metadata": {"name": "web", "annotations": {
                "kubelet-emulator.gleaner.io/ignore-sigterm": "true"}},
            "spec": {"nodeName": "n1", "terminationGracePeriodSeconds": 1, "containers": [{
                "name": "web", "image": "nginx",
                "ports": [{"containerPort": 8080, "hostPort": web_port}],
                "resources": {"requests": {"cpu": "500m", "memory": "128Mi"},
                              "limits": {"cpu": "500m", "memory": "128Mi"}}}]}})
        self.call("POST", "/api/v1/namespaces/%s/pods" % NS, {
            "metadata": {"name": "cache"},
            "spec": {"nodeName": "n1", "terminationGracePeriodSeconds": 5, "containers": [{
                "name": "cache", "image": "redis",
                "resources": {"requests": {"cpu": "250m", "memory": "64Mi"},
                              "limits": {"cpu": "1"}}}]}})
        self.call("POST", "/apis/%s/%s/namespaces/%s/%s" % (GROUP, VERSION, NS, PLURAL), {
            "apiVersion": "%s/%s" % (GROUP, VERSION), "kind": "SparkApplication",
            "metadata": {"name": "batch", "annotations": {S + "task-seconds": "0.2",
                                                           S + "task-memory": str(32 << 20)}},
            "spec": {"type": "Scala", "mode": "cluster", "image": "spark:3.5.5",
                     "mainClass": "org.apache.spark.examples.SparkPi",
                     "mainApplicationFile": "local:///opt/spark/examples/jars/x.jar",
                     "sparkVersion": "3.5.5", "sparkConf": FAST,
                     "executor": {"instances": 1, "cores": 1, "memory": "512m"}}})

        def running():
            pods = self.pods()
            execs = [p for p in pods.values() if (p["metadata"].get("labels") or {}).get(
                "spark-role") == "executor"]
            if len(execs) != 1 or len(pods) != 4 or any(
                    p["status"].get("phase") != "Running" for p in pods.values()):
                return None
            return pods, execs[0]
        pods, executor = self.wait_for("the four pods running on n1", running)

        # kubelet's cgroups, with kubelet's values.
        self.assertEqual(self.cg("kubepods", "cpu.shares"), "2048")  # 2 allocatable cpus
        self.assertEqual(self.cg("kubepods/besteffort", "cpu.shares"), "2")
        self.assertEqual(self.cg("kubepods/burstable", "cpu.shares"), "256")  # cache's 250m
        web = self.container_dir(pods["web"], "kubepods")  # Guaranteed: right under kubepods
        for d in (web, os.path.dirname(web)):
            self.assertEqual(self.cg(d, "cpu.shares"), "512")
            self.assertEqual(self.cg(d, "cpu.cfs_period_us"), "100000")
            self.assertEqual(self.cg(d, "cpu.cfs_quota_us"), "50000")
            self.assertEqual(self.cg(d, "memory.limit_in_bytes", "memory"), str(128 << 20))
        cache = self.container_dir(pods["cache"], "kubepods/burstable")
        for d in (cache, os.path.dirname(cache)):
            self.assertEqual(self.cg(d, "cpu.shares"), "256")
            self.assertEqual(self.cg(d, "cpu.cfs_quota_us"), "100000")
        unlimited = self.cg("kubepods", "memory.limit_in_bytes", "memory")
        self.assertEqual(self.cg(cache, "memory.limit_in_bytes", "memory"), unlimited)
        self.assertEqual(executor["status"]["qosClass"], "BestEffort")
        be = self.container_dir(executor, "kubepods/besteffort")
        for d in (be, os.path.dirname(be)):
            self.assertEqual(self.cg(d, "cpu.shares"), "2")
            self.assertEqual(self.cg(d, "cpu.cfs_quota_us"), "-1")
            self.assertEqual(self.cg(d, "memory.limit_in_bytes", "memory"), unlimited)

        # Real processes inside them: the service answers, the executor works its tasks.
        pids = {name: self.assert_inside(d) for name, d in (("web", web), ("cache", cache),
                                                            ("executor", be))}
        def answers():  # Running says the process started, not that it listens yet
            try:
                with urllib.request.urlopen("http://127.0.0.1:%d/" % web_port, timeout=10) as r:
                    return r.status == 200
            except OSError:
                return False
        self.wait_for("the web service answering on its hostPort", answers)
        start = int(self.cg(be, "cpuacct.usage", "cpuacct"))
        self.wait_for("0.3 s of CPU in the executor's cgroup", lambda: int(self.cg(
            be, "cpuacct.usage", "cpuacct")) - start >= 300_000_000)
        self.wait_for("its tasks' 32 MiB charged to the executor's memory cgroup", lambda: int(
            self.cg(be, "memory.max_usage_in_bytes", "memory")) >= 32 << 20)

        # The kubelet API: the node's pods with uid, QoS class and status; a token needed.
        listed = self.kubelet_pods()
        self.assertEqual(listed["kind"], "PodList")
        got = {p["metadata"]["name"]: (p["metadata"]["uid"], p["status"]["qosClass"],
                                       p["status"]["phase"]) for p in listed["items"]}
        for name, qos in (("web", "Guaranteed"), ("cache", "Burstable"),
                          (executor["metadata"]["name"], "BestEffort")):
            self.assertEqual(got.get(name), (self.pods()[name]["metadata"]["uid"], qos,
                                             "Running"), name)
        with self.assertRaises(urllib.error.HTTPError) as denied:
            self.kubelet_pods(token=None)
        self.assertEqual(denied.exception.code, 401)

        # An executor whose process dies (SIGKILL, as from the OOM killer) ends its pod with
        # exit code 137; Spark deletes the pod and asks for another, which runs for real.
        os.kill(pids["executor"], signal.SIGKILL)

        def replaced():
            execs = [p for p in self.pods().values() if (p["metadata"].get("labels") or {}).get(
                "spark-role") == "executor"]
            fresh = [p for p in execs if p["metadata"]["uid"] != executor["metadata"]["uid"] and
                     p["status"].get("phase") == "Running"]
            return fresh[0] if fresh and len(execs) == 1 else None
        replacement = self.wait_for("the killed executor replaced", replaced)
        with open(self.log) as f:
            self.assertIn("container %s of %s exited with 137 (Error)" % (
                executor["status"]["containerStatuses"][0]["name"],
                executor["metadata"]["name"]), f.read())
        self.wait_for("the killed executor's pod cgroup removed", lambda: not os.path.exists(
            os.path.join(self.scratch.root, "cpu", os.path.dirname(be))))
        be = self.container_dir(replacement, "kubepods/besteffort")
        pids["executor"] = self.assert_inside(be)

        # Deletion: the processes stopped (web ignores SIGTERM: SIGKILL after its 1 s grace
        # period), the pod cgroups removed.
        self.call("DELETE", "/api/v1/namespaces/%s/pods/web" % NS)
        self.call("DELETE", "/api/v1/namespaces/%s/pods/cache" % NS)
        self.call("DELETE", "/apis/%s/%s/namespaces/%s/%s/batch" % (GROUP, VERSION, NS, PLURAL))
        for name, pid in pids.items():
            self.wait_for("%s's process %d gone" % (name, pid),
                          lambda: not os.path.exists("/proc/%d" % pid))
        with open(self.log) as f:
            self.assertIn("web of web outlived its 1s grace period; SIGKILL", f.read())
        for d in (web, cache, be):
            self.wait_for("%s removed" % os.path.dirname(d), lambda: not os.path.exists(
                os.path.join(self.scratch.root, "cpu", os.path.dirname(d))))
        self.wait_for("no pod in the kubelet's /pods", lambda: not self.kubelet_pods()["items"])
        self.wait_for("no pod cgroup left", lambda: not any(
            name.startswith("pod") for qos in ("kubepods", "kubepods/burstable",
                                               "kubepods/besteffort")
            for name in os.listdir(os.path.join(self.scratch.root, "memory", qos))))


if __name__ == "__main__":
    if scratch_cgroups.skip_reason():
        print("skipped: " + scratch_cgroups.skip_reason())
        sys.exit(77)
    unittest.main(verbosity=2)
