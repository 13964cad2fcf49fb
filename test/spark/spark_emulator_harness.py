"""The fixture of spark_emulator_test.py: the test API server, spark_emulator.py against
it, a recorder of what happens to pods and SparkApplications, and the helpers the tests use
(the test stands in for the scheduler: it binds pending pods through pods/binding)."""

import json
import os
import select
import signal
import subprocess
import sys
import tempfile
import threading
import time
import unittest

from kubernetes import client
from kubernetes.client.rest import ApiException

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "e2e"))
from e2e_harness import PodRecorder, deadline_loop  # noqa: E402
APISERVER = os.path.join(os.path.dirname(HERE), "apiserver", "apiserver.py")
EMULATOR = os.path.join(HERE, "spark_emulator.py")
GROUP, VERSION, PLURAL = "sparkoperator.k8s.io", "v1beta2", "sparkapplications"
S = "spark-emulator.gleaner.io/"
FAST = {"spark.kubernetes.allocation.batch.delay": "100ms",
        "spark.kubernetes.executor.eventProcessingInterval": "100ms"}


def read_line(proc, what, timeout=15):
    deadline = time.monotonic() + timeout
    line = b""
    while not line.endswith(b"\n"):
        ready, _, _ = select.select([proc.stdout], [], [], max(0, deadline - time.monotonic()))
        if not ready:
            proc.kill()
            raise RuntimeError("%s printed no line within %ds" % (what, timeout))
        byte = os.read(proc.stdout.fileno(), 1)
        if not byte:
            raise RuntimeError("%s exited before it was ready" % what)
        line += byte
    return line.decode().strip()


class EmulatorCase(unittest.TestCase):
    """A test API server, the emulator against it, and the helpers the tests use."""

    @classmethod
    def setUpClass(cls):
        cls.api_proc = subprocess.Popen(
            ["/usr/bin/python3", APISERVER, "--port", "0", "--bookmark-interval", "0.5"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        line = read_line(cls.api_proc, "the test API server")
        assert line.startswith("ready port="), line
        cls.server = "http://127.0.0.1:%s" % line.split("=")[1]
        cls.client = client.ApiClient(client.Configuration(host=cls.server))
        cls.core = client.CoreV1Api(cls.client)
        cls.custom = client.CustomObjectsApi(cls.client)
        for name, allocatable in (
                ("n1", {"cpu": "32", "memory": "64Gi", "pods": "110",
                        "kubernetes.io/batch-cpu": "32000", "kubernetes.io/batch-memory": "64Gi"}),
                ("small", {"cpu": "4", "memory": "8Gi", "pods": "10",
                           "kubernetes.io/batch-cpu": "1000",
                           "kubernetes.io/batch-memory": "4Gi"}),
                ("elsewhere", {"cpu": "32", "memory": "64Gi", "pods": "110"})):
            cls.core.create_node({"metadata": {"name": name, "labels": {"pool": "batch"}}})
            cls.core.patch_node_status(name, {"status": {"allocatable": allocatable}})
        cls.log = tempfile.NamedTemporaryFile(prefix="spark-emulator-", suffix=".log",
                                              delete=False)
        cls.emu = subprocess.Popen(
            ["/usr/bin/python3", EMULATOR, "--server", cls.server, "--nodes", "n1,small",
             "--exit-on-stdin-eof", "--verbose"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=cls.log)
        assert read_line(cls.emu, "the emulator") == "ready"
        cls.recorder = PodRecorder(cls.core)
        cls.recorder.start()
        cls.policies = {}  # namespace -> pod -> node name (or None: leave it pending)
        cls.stop_binding = threading.Event()
        threading.Thread(target=cls.binder, daemon=True).start()

    @classmethod
    def tearDownClass(cls):
        cls.stop_binding.set()
        cls.recorder.stopping.set()
        cls.emu.send_signal(signal.SIGTERM)
        try:
            cls.emu.wait(10)
        except subprocess.TimeoutExpired:
            cls.emu.kill()
        cls.api_proc.kill()
        cls.api_proc.wait()
        cls.recorder.join(2)  # its watch ends with the API server
        cls.log.close()
        os.unlink(cls.log.name)

    # --- the stand-in scheduler --------------------------------------------------------
    @classmethod
    def binder(cls):
        while not cls.stop_binding.wait(0.03):
            try:
                pending = cls.core.list_pod_for_all_namespaces(
                    field_selector="spec.nodeName=,status.phase=Pending").items
            except Exception:  # noqa: BLE001
                continue
            for pod in pending:
                policy = cls.policies.get(pod.metadata.namespace)
                node = policy(pod) if policy else None
                if node:
                    cls.bind(pod.metadata.namespace, pod.metadata.name, node, pod.metadata.uid)

    @classmethod
    def bind(cls, ns, name, node, uid=None):
        body = {"apiVersion": "v1", "kind": "Binding",
                "metadata": {"name": name, "uid": uid},
                "target": {"apiVersion": "v1", "kind": "Node", "name": node}}
        try:
            resp = cls.core.create_namespaced_pod_binding(name, ns, body, _preload_content=False)
            resp.read()
        except ApiException:
            pass  # gone or bound meanwhile

    # --- helpers -------------------------------------------------------------------------
    def wait_for(self, what, fn, timeout=8.0):
        last = None
        for _ in deadline_loop(timeout, 0.03):
            try:
                last = fn()
            except ApiException as e:
                last = e
            if last and not isinstance(last, Exception):
                return last
        with open(self.log.name) as f:
            tail = "".join(f.readlines()[-40:])
        self.fail("timed out waiting for %s (last: %r)\nemulator log tail:\n%s"
                  % (what, last, tail))

    def create_app(self, ns, name, spec, annotations=None, labels=None):
        body = {"apiVersion": "%s/%s" % (GROUP, VERSION), "kind": "SparkApplication",
                "metadata": {"name": name, "annotations": annotations or {},
                             "labels": labels or {}},
                "spec": dict({"type": "Scala", "mode": "cluster", "image": "spark:3.5.5",
                              "mainClass": "org.apache.spark.examples.SparkPi",
                              "mainApplicationFile": "local:///opt/spark/examples/jars/"
                                                     "spark-examples_2.12-3.5.5.jar",
                              "sparkVersion": "3.5.5"}, **spec)}
        return self.custom.create_namespaced_custom_object(GROUP, VERSION, ns, PLURAL, body)

    def app(self, ns, name):
        return self.custom.get_namespaced_custom_object(GROUP, VERSION, ns, PLURAL, name)

    def state(self, ns, name):
        return self.app(ns, name).get("status", {}).get("applicationState", {}).get("state")

    def wait_state(self, ns, name, state, timeout=8.0):
        return self.wait_for("%s/%s in %s" % (ns, name, state),
                             lambda: self.app(ns, name) if self.state(ns, name) == state
                             else None, timeout)

    def pods(self, ns, selector=None):
        resp = self.core.list_namespaced_pod(ns, label_selector=selector, _preload_content=False)
        return json.loads(resp.data)["items"]

    def pod(self, ns, name):
        try:
            return json.loads(self.core.read_namespaced_pod(name, ns, _preload_content=False).data)
        except ApiException as e:
            if e.status == 404:
                return None
            raise

    def executors(self, ns):
        return {int(p["metadata"]["labels"]["spark-exec-id"]): p
                for p in self.pods(ns, "spark-role=executor")}

    def executor_history(self, ns, app=None):
        """executor id -> the phases its pod went through, and whether it was deleted."""
        out = {}

        def wanted(etype, pod):
            labels = pod["metadata"].get("labels") or {}
            return labels.get("spark-role") == "executor" and \
                app in (None, labels.get("sparkoperator.k8s.io/app-name"))

        for etype, pod in self.recorder.seen(ns, wanted):
            i = int(pod["metadata"]["labels"]["spark-exec-id"])
            entry = out.setdefault(i, {"phases": [], "deleted": False, "pod": pod})
            phase = (pod.get("status") or {}).get("phase")
            if etype == "DELETED":
                entry["deleted"] = True
            elif not entry["phases"] or entry["phases"][-1] != phase:
                entry["phases"].append(phase)
            if etype != "DELETED":
                entry["pod"] = pod
        return out

    def wait_executors_deleted(self, ns, app=None):
        """The history once every executor's deletion is seen: the recorder's watch may
        deliver deletions after a GET that saw the application COMPLETED."""
        return self.wait_for("every executor's deletion seen", lambda: (
            lambda h: h if h and all(e["deleted"] for e in h.values()) else None)(
                self.executor_history(ns, app)))

    def wait_replaced(self, ns, new_id, old_id, app=None):
        """The history once executor new_id is Running and old_id's deletion is seen.
        Spark's lifecycle manager deletes a finished pod and its allocator asks for the
        replacement, each on its own snapshot subscriber, so either can be seen first."""
        return self.wait_for("executor %d running and %d deleted" % (new_id, old_id), lambda: (
            lambda h: h if "Running" in h.get(new_id, {}).get("phases", []) and
            h.get(old_id, {}).get("deleted") else None)(self.executor_history(ns, app)))

    def arm_failure(self, prefix, code, count=1):
        self.client.call_api("/_admin/fail", "POST", query_params=[
            ("count", str(count)), ("method", "POST"), ("prefix", prefix), ("code", str(code))],
            _preload_content=False)
