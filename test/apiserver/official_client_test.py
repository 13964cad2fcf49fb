#!/usr/bin/python3
"""Drives the test API server with the official Kubernetes Python client, so the stand-in
answers what real clients expect and not only our own client's reading of the API. The
mutating-admission tests run an HTTPS webhook in this process, with a throwaway
certificate made by the openssl CLI."""

import base64
import http.server
import json
import os
import select
import shutil
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time
import unittest
import urllib.parse

from kubernetes import client, watch
from kubernetes.client.rest import ApiException

HERE = os.path.dirname(os.path.abspath(__file__))
TOKEN = "official-client-token"


def start_server():
    proc = subprocess.Popen(["/usr/bin/python3", os.path.join(HERE, "apiserver.py"),
                             "--port", "0", "--token", TOKEN, "--bookmark-interval", "0.2"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    deadline = time.monotonic() + 10
    line = b""
    while not line.endswith(b"\n"):
        ready, _, _ = select.select([proc.stdout], [], [], max(0, deadline - time.monotonic()))
        if not ready:
            proc.kill()
            raise RuntimeError("test API server printed no ready line within 10 s")
        byte = os.read(proc.stdout.fileno(), 1)
        if not byte:
            raise RuntimeError("test API server exited before it was ready")
        line += byte
    assert line.startswith(b"ready port="), line
    return proc, int(line.split(b"=")[1])


def pod(name, labels=None, scheduler="gleaner"):
    return client.V1Pod(
        metadata=client.V1ObjectMeta(name=name, labels=labels or {}),
        spec=client.V1PodSpec(scheduler_name=scheduler, containers=[client.V1Container(
            name="main", image="busybox", resources=client.V1ResourceRequirements(
                requests={"cpu": "500m", "memory": "1Gi"}, limits={"cpu": "500m",
                                                                   "memory": "1Gi"}))]))


def make_certificate(directory, stem, names):
    """A self-signed certificate (its own CA) for `names`: (cert path, key path, caBundle)."""
    cert, key = os.path.join(directory, stem + ".crt"), os.path.join(directory, stem + ".key")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                    "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", key, "-out", cert,
                    "-days", "1", "-subj", "/CN=" + stem, "-addext",
                    "subjectAltName=" + ",".join(names)],
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    with open(cert, "rb") as f:
        return cert, key, base64.b64encode(f.read()).decode()


def review_answer(review, allowed=True, patch=None, status=None, warnings=None, uid=None):
    response = {"uid": review["request"]["uid"] if uid is None else uid, "allowed": allowed}
    if patch is not None:
        response["patch"] = base64.b64encode(json.dumps(patch).encode()).decode()
        response["patchType"] = "JSONPatch"
    if status is not None:
        response["status"] = status
    if warnings:
        response["warnings"] = warnings
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": response}


class WebhookServer:
    """An HTTPS admission webhook: `behaviours[path](review)` answers the review sent to
    path; every review received is kept in `received` as (path, query, review)."""

    def __init__(self, cert, key):
        self.behaviours, self.received, self.lock = {}, [], threading.Lock()
        self.release = threading.Event()  # ends the waits of deliberately slow answers
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, fmt, *args):
                pass

            def do_POST(self):
                url = urllib.parse.urlsplit(self.path)
                review = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                with outer.lock:
                    outer.received.append((url.path, url.query, review))
                answer = outer.behaviours[url.path](review)
                data = answer if isinstance(answer, bytes) else json.dumps(answer).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        class Server(http.server.ThreadingHTTPServer):
            def handle_error(self, request, client_address):
                pass  # the API server hangs up on answers that come too late, as it should

        self.httpd = Server(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(cert, key)
        self.httpd.socket = context.wrap_socket(self.httpd.socket, server_side=True)
        self.port = self.httpd.server_address[1]
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def reviews(self, path):
        with self.lock:
            return [r for p, _, r in self.received if p == path]

    def stop(self):
        self.release.set()
        self.httpd.shutdown()
        self.httpd.server_close()


def closed_port():
    """A loopback port nothing listens on."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def api_client(port):
    """The official client, configured for the test server on `port` with its token."""
    config = client.Configuration(host="http://127.0.0.1:%d" % port)
    config.api_key = {"authorization": TOKEN}
    config.api_key_prefix = {"authorization": "Bearer"}
    return client.ApiClient(config)


class OfficialClientTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.proc, port = start_server()
        cls.api = api_client(port)
        cls.core = client.CoreV1Api(cls.api)
        cls.custom = client.CustomObjectsApi(cls.api)
        cls.admission = client.AdmissionregistrationV1Api(cls.api)
        cls.scheduling = client.SchedulingV1Api(cls.api)
        cls.tmp = tempfile.mkdtemp(prefix="apiserver-webhook-")
        cert, key, cls.ca_bundle = make_certificate(
            cls.tmp, "webhook", ["IP:127.0.0.1", "DNS:mutator.webhooks.svc"])
        _, _, cls.other_ca_bundle = make_certificate(cls.tmp, "stranger", ["IP:127.0.0.1"])
        cls.webhook = WebhookServer(cert, key)

    @classmethod
    def tearDownClass(cls):
        cls.webhook.stop()
        shutil.rmtree(cls.tmp, ignore_errors=True)
        cls.proc.stdin.close()
        cls.proc.kill()
        cls.proc.wait()
        cls.proc.stdout.close()
        cls.api.close()

    # --- helpers for the admission tests ----------------------------------------------
    def register(self, config_name, namespace, hooks):
        """Creates a MutatingWebhookConfiguration whose webhooks (dicts of V1MutatingWebhook
        arguments plus `path` or `url`) see only pods in `namespace`; deleted after the test."""
        webhooks = []
        for h in hooks:
            h = dict(h)
            url = h.pop("url", None) or "https://127.0.0.1:%d%s" % (self.webhook.port,
                                                                    h.pop("path", "/"))
            h.setdefault("client_config", client.AdmissionregistrationV1WebhookClientConfig(
                url=url, ca_bundle=h.pop("ca_bundle", self.ca_bundle)))
            h.setdefault("namespace_selector", client.V1LabelSelector(
                match_labels={"kubernetes.io/metadata.name": namespace}))
            h.setdefault("rules", [client.V1RuleWithOperations(
                operations=["CREATE"], api_groups=[""], api_versions=["v1"],
                resources=["pods"])])
            h.setdefault("side_effects", "None")
            h.setdefault("admission_review_versions", ["v1"])
            webhooks.append(client.V1MutatingWebhook(**h))
        created = self.admission.create_mutating_webhook_configuration(
            client.V1MutatingWebhookConfiguration(
                metadata=client.V1ObjectMeta(name=config_name), webhooks=webhooks))
        self.addCleanup(self.admission.delete_mutating_webhook_configuration, config_name)
        return created

    def admin_get(self, what):
        resp = self.api.call_api("/_admin/" + what, "GET", _preload_content=False)[0]
        return json.loads(resp.data)

    def calls(self, webhook_name):
        return [c for c in self.admin_get("webhook-calls")["calls"]
                if c["webhook"] == webhook_name]

    def label_patch(self, key, value):
        return lambda review: review_answer(review, patch=[
            {"op": "add", "path": "/metadata/labels", "value": dict(
                (review["request"]["object"]["metadata"].get("labels") or {}), **{key: value})}])

    def test_create_get_list_with_selectors_and_pages(self):
        for i in range(5):
            self.core.create_namespaced_pod("pages", pod("p%d" % i, {"tier": "batch" if i % 2
                                                                      else "online"}))
        got = self.core.read_namespaced_pod("p1", "pages")
        self.assertEqual(got.status.qos_class, "Guaranteed")
        self.assertEqual(got.status.phase, "Pending")
        batch = self.core.list_namespaced_pod("pages", label_selector="tier in (batch)")
        self.assertEqual([p.metadata.name for p in batch.items], ["p1", "p3"])
        names, cont = [], None
        while True:
            page = self.core.list_namespaced_pod("pages", limit=2, _continue=cont)
            names += [p.metadata.name for p in page.items]
            cont = page.metadata._continue
            if not cont:
                break
        self.assertEqual(names, ["p0", "p1", "p2", "p3", "p4"])
        unscheduled = self.core.list_pod_for_all_namespaces(
            field_selector="spec.schedulerName=gleaner,spec.nodeName=")
        self.assertGreaterEqual(len(unscheduled.items), 5)

    def test_errors_are_status_objects(self):
        with self.assertRaises(ApiException) as missing:
            self.core.read_namespaced_pod("nope", "errors")
        self.assertEqual(missing.exception.status, 404)
        self.core.create_namespaced_pod("errors", pod("dup"))
        with self.assertRaises(ApiException) as dup:
            self.core.create_namespaced_pod("errors", pod("dup"))
        self.assertEqual(dup.exception.status, 409)
        stale = self.core.read_namespaced_pod("dup", "errors")
        self.core.patch_namespaced_pod("dup", "errors", {"metadata": {"labels": {"x": "1"}}})
        stale.metadata.labels = {"x": "2"}
        with self.assertRaises(ApiException) as conflict:
            self.core.replace_namespaced_pod("dup", "errors", stale)
        self.assertEqual(conflict.exception.status, 409)
        with self.assertRaises(ApiException) as bad:
            self.core.list_namespaced_pod("errors", field_selector="spec.bogus=1")
        self.assertEqual(bad.exception.status, 400)

    def test_watch_sees_changes_and_bookmarks(self):
        start = self.core.list_namespaced_pod("watched").metadata.resource_version
        seen, done = [], threading.Event()

        def produce():
            self.core.create_namespaced_pod("watched", pod("w1"))
            self.core.patch_namespaced_pod_status("w1", "watched", {"status": {"phase": "Running"}})
            self.core.delete_namespaced_pod("w1", "watched")

        w = watch.Watch()
        threading.Thread(target=produce).start()
        for event in w.stream(self.core.list_namespaced_pod, "watched", resource_version=start,
                              allow_watch_bookmarks=True, timeout_seconds=10):
            seen.append(event["type"])
            if event["type"] == "DELETED":
                done.set()
                w.stop()
        self.assertTrue(done.is_set(), seen)
        self.assertEqual([t for t in seen if t != "BOOKMARK"], ["ADDED", "MODIFIED", "DELETED"])

    def test_bind_sets_node_and_rejects_second_bind(self):
        created = self.core.create_namespaced_pod("bind", pod("b1"))
        binding = client.V1Binding(
            metadata=client.V1ObjectMeta(name="b1", uid=created.metadata.uid),
            target=client.V1ObjectReference(api_version="v1", kind="Node", name="node-7"))
        # The response is a Status, which the generated client cannot read as a V1Binding.
        resp = self.core.create_namespaced_pod_binding("b1", "bind", binding,
                                                       _preload_content=False)
        self.assertEqual(resp.status, 201)
        self.assertEqual(json.loads(resp.data)["status"], "Success")
        bound = self.core.read_namespaced_pod("b1", "bind")
        self.assertEqual(bound.spec.node_name, "node-7")
        self.assertIn("PodScheduled", [c.type for c in bound.status.conditions])
        with self.assertRaises(ApiException) as again:
            self.core.create_namespaced_pod_binding("b1", "bind", binding, _preload_content=False)
        self.assertEqual(again.exception.status, 409)

    def test_evict_deletes_pod_and_budget_answers_429(self):
        self.core.create_namespaced_pod("evict", pod("e1"))
        eviction = client.V1Eviction(metadata=client.V1ObjectMeta(name="e1", namespace="evict"))
        self.api.call_api("/_admin/eviction-429", "POST", query_params=[("count", "1")])
        with self.assertRaises(ApiException) as blocked:
            self.core.create_namespaced_pod_eviction("e1", "evict", eviction)
        self.assertEqual(blocked.exception.status, 429)
        self.core.create_namespaced_pod_eviction("e1", "evict", eviction)
        with self.assertRaises(ApiException) as gone:
            self.core.read_namespaced_pod("e1", "evict")
        self.assertEqual(gone.exception.status, 404)

    def test_patch_node_status_and_spark_application(self):
        self.core.create_node(client.V1Node(metadata=client.V1ObjectMeta(name="n1")))
        self.core.patch_node_status("n1", {"status": {"allocatable": {
            "kubernetes.io/batch-cpu": "3500", "kubernetes.io/batch-memory": "8Gi"}}})
        node = self.core.read_node("n1")
        self.assertEqual(node.status.allocatable["kubernetes.io/batch-cpu"], "3500")
        self.core.patch_node("n1", {"status": {"allocatable": {"cpu": "1"}}})
        self.assertNotIn("cpu", self.core.read_node("n1").status.allocatable,
                         "the main resource must ignore status changes")
        app = {"apiVersion": "sparkoperator.k8s.io/v1beta2", "kind": "SparkApplication",
               "metadata": {"name": "pi"}, "spec": {"type": "Scala", "driver": {"cores": 1},
                                                    "executor": {"instances": 2}}}
        self.custom.create_namespaced_custom_object("sparkoperator.k8s.io", "v1beta2", "spark",
                                                    "sparkapplications", app)
        self.custom.patch_namespaced_custom_object_status(
            "sparkoperator.k8s.io", "v1beta2", "spark", "sparkapplications", "pi",
            {"status": {"applicationState": {"state": "RUNNING"}}})
        got = self.custom.get_namespaced_custom_object("sparkoperator.k8s.io", "v1beta2", "spark",
                                                       "sparkapplications", "pi")
        self.assertEqual(got["status"]["applicationState"]["state"], "RUNNING")
        self.assertEqual(got["spec"]["executor"]["instances"], 2)

    def test_delete_with_uid_precondition(self):
        app = {"apiVersion": "sparkoperator.k8s.io/v1beta2", "kind": "SparkApplication",
               "metadata": {"name": "pre"}, "spec": {"type": "Scala"}}
        args = ("sparkoperator.k8s.io", "v1beta2", "spark", "sparkapplications")
        uid = self.custom.create_namespaced_custom_object(*args, app)["metadata"]["uid"]
        stale = client.V1DeleteOptions(preconditions=client.V1Preconditions(uid="not-" + uid))
        with self.assertRaises(ApiException) as refused:
            self.custom.delete_namespaced_custom_object(*args, "pre", body=stale)
        self.assertEqual(refused.exception.status, 409)
        self.assertIn("Precondition failed: UID in precondition", refused.exception.body)
        self.custom.get_namespaced_custom_object(*args, "pre")  # still there
        same = client.V1DeleteOptions(preconditions=client.V1Preconditions(uid=uid))
        self.custom.delete_namespaced_custom_object(*args, "pre", body=same)
        with self.assertRaises(ApiException) as gone:
            self.custom.get_namespaced_custom_object(*args, "pre")
        self.assertEqual(gone.exception.status, 404)

    def test_patch_naming_a_uid_is_a_precondition(self):
        app = {"apiVersion": "sparkoperator.k8s.io/v1beta2", "kind": "SparkApplication",
               "metadata": {"name": "pat"}, "spec": {"type": "Scala"}}
        args = ("sparkoperator.k8s.io", "v1beta2", "spark", "sparkapplications")
        uid = self.custom.create_namespaced_custom_object(*args, app)["metadata"]["uid"]
        stale = {"metadata": {"uid": "not-" + uid, "annotations": {"k": "stale"}}}
        with self.assertRaises(ApiException) as refused:
            self.custom.patch_namespaced_custom_object(*args, "pat", stale)
        self.assertEqual(refused.exception.status, 409)
        self.assertIn("Precondition failed: UID in precondition", refused.exception.body)
        got = self.custom.get_namespaced_custom_object(*args, "pat")
        self.assertNotIn("annotations", got["metadata"])  # nothing of it applied
        same = {"metadata": {"uid": uid, "annotations": {"k": "v"}}}
        patched = self.custom.patch_namespaced_custom_object(*args, "pat", same)
        self.assertEqual(patched["metadata"]["annotations"], {"k": "v"})

    def test_delete_with_a_finalizer_marks_until_the_finalizer_goes(self):
        app = {"apiVersion": "sparkoperator.k8s.io/v1beta2", "kind": "SparkApplication",
               "metadata": {"name": "fin", "finalizers": ["example.com/hold"],
                            "deletionTimestamp": "2020-01-01T00:00:00Z"},
               "spec": {"type": "Scala"}}
        args = ("sparkoperator.k8s.io", "v1beta2", "spark", "sparkapplications")
        created = self.custom.create_namespaced_custom_object(*args, app)
        self.assertNotIn("deletionTimestamp", created["metadata"])  # not the writer's to set
        stream = watch.Watch()
        events = []

        def collect():
            for e in stream.stream(self.custom.list_namespaced_custom_object, *args,
                                   resource_version=created["metadata"]["resourceVersion"],
                                   timeout_seconds=10):
                events.append((e["type"], e["object"]["metadata"]))
                if e["type"] == "DELETED":
                    stream.stop()

        reader = threading.Thread(target=collect)
        reader.start()
        self.custom.delete_namespaced_custom_object(*args, "fin")
        marked = self.custom.get_namespaced_custom_object(*args, "fin")
        self.assertIn("deletionTimestamp", marked["metadata"])
        again = self.custom.delete_namespaced_custom_object(*args, "fin")
        self.assertEqual(again["metadata"]["resourceVersion"],
                         marked["metadata"]["resourceVersion"])  # a second delete is a no-op
        with self.assertRaises(ApiException) as refused:
            self.custom.patch_namespaced_custom_object(
                *args, "fin", {"metadata": {"finalizers": ["example.com/hold", "more"]}})
        self.assertEqual(refused.exception.status, 422)
        self.custom.patch_namespaced_custom_object(*args, "fin",
                                                   {"metadata": {"finalizers": None}})
        with self.assertRaises(ApiException) as gone:
            self.custom.get_namespaced_custom_object(*args, "fin")
        self.assertEqual(gone.exception.status, 404)
        reader.join(15)
        self.assertEqual([t for t, _ in events], ["MODIFIED", "DELETED"])
        self.assertIn("deletionTimestamp", events[0][1])

    def test_daemon_set_generation_follows_spec_changes(self):
        apps = client.AppsV1Api(self.api)
        body = {"apiVersion": "apps/v1", "kind": "DaemonSet",
                "metadata": {"name": "agent-gen", "generation": 7},
                "spec": {"selector": {"matchLabels": {"app": "a"}},
                         "template": {"metadata": {"labels": {"app": "a"}},
                                      "spec": {"containers": [{"name": "c", "image": "i:1"}]}}}}
        created = apps.create_namespaced_daemon_set("kube-system", body)
        self.assertEqual(created.metadata.generation, 1)  # the server's, not the client's
        template_generation = "deprecated.daemonset.template.generation"
        self.assertEqual(created.metadata.annotations[template_generation], "1")
        patched = apps.patch_namespaced_daemon_set(
            "agent-gen", "kube-system",
            {"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "i:2"}]}}}})
        self.assertEqual(patched.metadata.generation, 2)
        self.assertEqual(patched.metadata.annotations[template_generation], "2")
        # A change outside the template: a new generation, the same template generation.
        tuned = apps.patch_namespaced_daemon_set(
            "agent-gen", "kube-system", {"spec": {"minReadySeconds": 5}})
        self.assertEqual(tuned.metadata.generation, 3)
        self.assertEqual(tuned.metadata.annotations[template_generation], "2")
        labelled = apps.patch_namespaced_daemon_set(
            "agent-gen", "kube-system", {"metadata": {"labels": {"x": "y"}}})
        self.assertEqual(labelled.metadata.generation, 3)  # metadata alone: no new generation
        apps.delete_namespaced_daemon_set("agent-gen", "kube-system")
        with self.assertRaises(ApiException) as gone:
            apps.read_namespaced_daemon_set("agent-gen", "kube-system")
        self.assertEqual(gone.exception.status, 404)

    def test_create_event(self):
        event = client.CoreV1Event(
            metadata=client.V1ObjectMeta(name="p.1"), reason="Scheduled", type="Normal",
            message="placed", involved_object=client.V1ObjectReference(kind="Pod", name="p"))
        self.core.create_namespaced_event("events", event)
        listed = self.core.list_namespaced_event("events", field_selector="reason=Scheduled")
        self.assertEqual([e.metadata.name for e in listed.items], ["p.1"])

    # --- the resources Gleaner's admission needs ------------------------------------------
    def test_namespace_secret_priority_class_and_custom_resources(self):
        ns = self.core.create_namespace(client.V1Namespace(
            metadata=client.V1ObjectMeta(name="res-team", labels={"team": "a"})))
        self.assertEqual(ns.metadata.labels, {"team": "a", "kubernetes.io/metadata.name":
                                              "res-team"})
        self.assertEqual(ns.status.phase, "Active")
        self.assertEqual(ns.spec.finalizers, ["kubernetes"])
        self.core.patch_namespace("res-team", {"metadata": {"labels": None}})
        self.assertEqual(self.core.read_namespace("res-team").metadata.labels,
                         {"kubernetes.io/metadata.name": "res-team"})  # the server's, kept
        self.core.patch_namespace_status("res-team", {"status": {"phase": "Terminating"}})
        self.assertEqual(self.core.read_namespace("res-team").status.phase, "Terminating")
        self.assertIn("res-team", [n.metadata.name for n in self.core.list_namespace().items])

        secret = self.core.create_namespaced_secret("res-team", client.V1Secret(
            metadata=client.V1ObjectMeta(name="tls"), string_data={"token": "s3cret"}))
        self.assertEqual(secret.type, "Opaque")
        self.assertEqual(base64.b64decode(secret.data["token"]), b"s3cret")
        self.assertIsNone(secret.string_data)
        with self.assertRaises(ApiException) as bad:
            self.core.create_namespaced_secret("res-team", {"metadata": {"name": "bad"},
                                                            "data": {"k": "not base64!"}})
        self.assertEqual(bad.exception.status, 400)

        pc = self.scheduling.create_priority_class(client.V1PriorityClass(
            metadata=client.V1ObjectMeta(name="res-batch"), value=5500))
        self.assertEqual(pc.preemption_policy, "PreemptLowerPriority")
        self.scheduling.patch_priority_class("res-batch", {"description": "batch"})  # strategic
        self.assertEqual(self.scheduling.read_priority_class("res-batch").description, "batch")
        with self.assertRaises(ApiException) as immutable:
            self.scheduling.patch_priority_class("res-batch", {"value": 10})
        self.assertEqual(immutable.exception.status, 422)
        with self.assertRaises(ApiException) as reserved:
            self.scheduling.create_priority_class(client.V1PriorityClass(
                metadata=client.V1ObjectMeta(name="res-huge"), value=2000000000))
        self.assertEqual(reserved.exception.status, 422)

        tree = {"apiVersion": "scheduling.sigs.k8s.io/v1beta1", "kind": "ElasticQuotaTree",
                "metadata": {"name": "tree"},
                "spec": {"root": {"name": "root", "max": {"cpu": "40"}, "min": {"cpu": "40"}}}}
        args = ("scheduling.sigs.k8s.io", "v1beta1", "kube-system", "elasticquotatrees")
        self.custom.create_namespaced_custom_object(*args, tree)
        self.custom.patch_namespaced_custom_object_status(*args, "tree", {"status": {"x": 1}})
        got = self.custom.get_namespaced_custom_object(*args, "tree")
        self.assertEqual((got["status"], got["spec"]["root"]["max"]), ({"x": 1}, {"cpu": "40"}))

        profile = {"apiVersion": "config.koordinator.sh/v1alpha1",
                   "kind": "ClusterColocationProfile", "metadata": {"name": "colocation"},
                   "spec": {"selector": {"matchLabels": {"koordinator.sh/enable-colocation":
                                                         "true"}},
                            "qosClass": "BE", "priorityClassName": "koord-batch"}}
        cargs = ("config.koordinator.sh", "v1alpha1", "clustercolocationprofiles")
        self.custom.create_cluster_custom_object(*cargs, profile)
        self.custom.patch_cluster_custom_object(*cargs, "colocation", {"spec": {"qosClass":
                                                                                 "LS"}})
        listed = self.custom.list_cluster_custom_object(*cargs)
        self.assertEqual([(p["metadata"]["name"], p["spec"]["qosClass"]) for p in
                          listed["items"]], [("colocation", "LS")])
        with self.assertRaises(ApiException) as strategic:
            self.api.call_api("/apis/config.koordinator.sh/v1alpha1/clustercolocationprofiles/"
                              "colocation", "PATCH", body={"spec": {}},
                              header_params={"Content-Type":
                                             "application/strategic-merge-patch+json"},
                              auth_settings=["BearerToken"])
        self.assertEqual(strategic.exception.status, 415)

    def test_webhook_configuration_is_defaulted_and_validated(self):
        created = self.register("val-config", "val", [{"name": "ok.gleaner.test", "path": "/"}])
        hook = created.webhooks[0]
        self.assertEqual((hook.failure_policy, hook.match_policy, hook.timeout_seconds,
                          hook.reinvocation_policy, hook.rules[0].scope),
                         ("Fail", "Equivalent", 10, "Never", "*"))
        bad = {"metadata": {"name": "val-bad"}, "webhooks": [{
            "name": "nodots", "admissionReviewVersions": ["v1"], "sideEffects": "Some",
            "clientConfig": {"url": "http://127.0.0.1:1/"}, "timeoutSeconds": 31}]}
        with self.assertRaises(ApiException) as refused:
            self.admission.create_mutating_webhook_configuration(bad)
        self.assertEqual(refused.exception.status, 422)
        fields = sorted(c["field"] for c in json.loads(refused.exception.body)["details"]["causes"])
        self.assertEqual(fields, ["webhooks[0].clientConfig.url", "webhooks[0].name",
                                  "webhooks[0].sideEffects", "webhooks[0].timeoutSeconds"])

    # --- mutating admission on pod creation --------------------------------------------------
    def test_webhook_patch_lands_on_the_created_pod(self):
        self.webhook.behaviours["/label"] = lambda review: dict(
            self.label_patch("mutated", "yes")(review),
            response=dict(self.label_patch("mutated", "yes")(review)["response"],
                          warnings=['labelled "mutated"']))
        self.register("patch-config", "wh-patch", [{"name": "label.gleaner.test",
                                                    "path": "/label"}])
        resp = self.core.create_namespaced_pod("wh-patch", pod("patched", {"app": "x"}),
                                               _preload_content=False)
        self.assertEqual(resp.status, 201)
        self.assertEqual(json.loads(resp.data)["metadata"]["labels"]["mutated"], "yes")
        self.assertEqual(resp.headers.get("Warning"), '299 - "labelled \\"mutated\\""')
        stored = self.core.read_namespaced_pod("patched", "wh-patch")
        self.assertEqual(stored.metadata.labels, {"app": "x", "mutated": "yes"})
        path, query, review = [r for r in self.webhook.received if r[0] == "/label"][-1]
        self.assertEqual(query, "timeout=10s")
        self.assertEqual((review["apiVersion"], review["kind"]),
                         ("admission.k8s.io/v1", "AdmissionReview"))
        req = review["request"]
        self.assertEqual(req["kind"], {"group": "", "version": "v1", "kind": "Pod"})
        self.assertEqual(req["resource"], {"group": "", "version": "v1", "resource": "pods"})
        self.assertEqual((req["requestKind"], req["requestResource"]),
                         (req["kind"], req["resource"]))
        self.assertEqual((req["name"], req["namespace"], req["operation"], req["dryRun"]),
                         ("patched", "wh-patch", "CREATE", False))
        self.assertIsNone(req["oldObject"])
        self.assertEqual(req["options"], {"kind": "CreateOptions", "apiVersion": "meta.k8s.io/v1"})
        self.assertIn("username", req["userInfo"])
        self.assertEqual(req["object"]["metadata"]["namespace"], "wh-patch")
        self.assertNotIn("uid", req["object"]["metadata"])
        self.assertEqual(req["object"]["spec"]["schedulerName"], "gleaner")
        self.assertEqual([c["outcome"] for c in self.calls("label.gleaner.test")], ["patched"])
        self.assertEqual(self.admin_get("webhook-calls")["counts"]["label.gleaner.test"], 1)

        # generateName: the name is not known yet, so the request has none.
        named = pod(None, {"app": "y"})
        named.metadata.generate_name = "gen-"
        created = self.core.create_namespaced_pod("wh-patch", named)
        self.assertTrue(created.metadata.name.startswith("gen-"))
        self.assertEqual(created.metadata.labels["mutated"], "yes")
        req = self.webhook.reviews("/label")[-1]["request"]
        self.assertNotIn("name", req)
        self.assertEqual(req["object"]["metadata"]["generateName"], "gen-")

    def test_webhook_through_a_mapped_service_reference(self):
        self.webhook.behaviours["/svc"] = self.label_patch("via", "service")
        self.register("svc-config", "wh-svc", [{
            "name": "svc.gleaner.test", "url": "unused",
            "client_config": client.AdmissionregistrationV1WebhookClientConfig(
                ca_bundle=self.ca_bundle, service=client.AdmissionregistrationV1ServiceReference(
                    namespace="webhooks", name="mutator", path="/svc", port=8443)),
            "failure_policy": "Fail"}])
        with self.assertRaises(ApiException) as unmapped:
            self.core.create_namespaced_pod("wh-svc", pod("unmapped"))
        self.assertEqual(unmapped.exception.status, 500)
        self.assertIn('Post "https://mutator.webhooks.svc:8443/svc?timeout=10s": service '
                      '"mutator" not found', json.loads(unmapped.exception.body)["message"])
        self.api.call_api("/_admin/webhook-service", "POST", query_params=[
            ("namespace", "webhooks"), ("name", "mutator"), ("port", "8443"),
            ("address", "127.0.0.1:%d" % self.webhook.port)])
        self.addCleanup(self.api.call_api, "/_admin/webhook-service", "POST", query_params=[
            ("namespace", "webhooks"), ("name", "mutator"), ("port", "8443"), ("address", "")])
        created = self.core.create_namespaced_pod("wh-svc", pod("mapped"))
        self.assertEqual(created.metadata.labels, {"via": "service"})

    def test_selectors_decide_which_webhooks_are_called(self):
        self.webhook.behaviours["/objsel"] = self.label_patch("objsel", "called")
        self.webhook.behaviours["/nssel"] = self.label_patch("nssel", "called")
        self.register("sel-object", "wh-sel", [{
            "name": "objsel.gleaner.test", "path": "/objsel",
            "object_selector": client.V1LabelSelector(match_expressions=[
                client.V1LabelSelectorRequirement(key="inject", operator="In",
                                                  values=["true"])])}])
        self.core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(
            name="wh-team", labels={"team": "a"})))
        self.addCleanup(self.core.delete_namespace, "wh-team")
        self.register("sel-namespace", "unused", [{
            "name": "nssel.gleaner.test", "path": "/nssel",
            "namespace_selector": client.V1LabelSelector(match_labels={"team": "a"})}])

        skipped = self.core.create_namespaced_pod("wh-sel", pod("plain"))
        self.assertEqual(skipped.metadata.labels, {})
        chosen = self.core.create_namespaced_pod("wh-sel", pod("chosen", {"inject": "true"}))
        self.assertEqual(chosen.metadata.labels, {"inject": "true", "objsel": "called"})
        self.assertEqual(len(self.calls("objsel.gleaner.test")), 1)
        self.assertEqual(len(self.webhook.reviews("/objsel")), 1)

        other = self.core.create_namespaced_pod("wh-elsewhere", pod("other"))  # no Namespace
        self.assertEqual(other.metadata.labels, {})
        team = self.core.create_namespaced_pod("wh-team", pod("team"))
        self.assertEqual(team.metadata.labels, {"nssel": "called"})
        self.assertEqual(len(self.calls("nssel.gleaner.test")), 1)

    def test_webhook_denial_is_the_answer(self):
        self.webhook.behaviours["/deny"] = lambda review: review_answer(
            review, allowed=False, status={"code": 403, "reason": "Forbidden",
                                           "message": "no pods today"},
            warnings=["come back tomorrow"])
        self.webhook.behaviours["/deny-bare"] = lambda review: review_answer(review,
                                                                             allowed=False)
        self.register("deny-config", "wh-deny", [{"name": "deny.gleaner.test", "path": "/deny"}])
        with self.assertRaises(ApiException) as denied:
            self.core.create_namespaced_pod("wh-deny", pod("refused"))
        self.assertEqual(denied.exception.status, 403)
        status = json.loads(denied.exception.body)
        self.assertEqual(status["message"], 'admission webhook "deny.gleaner.test" denied the '
                                            "request: no pods today")
        self.assertEqual((status["reason"], status["code"]), ("Forbidden", 403))
        self.assertEqual(denied.exception.headers.get("Warning"), '299 - "come back tomorrow"')
        with self.assertRaises(ApiException) as gone:
            self.core.read_namespaced_pod("refused", "wh-deny")
        self.assertEqual(gone.exception.status, 404)

        self.register("deny-bare-config", "wh-deny-bare", [{"name": "bare.gleaner.test",
                                                            "path": "/deny-bare"}])
        with self.assertRaises(ApiException) as bare:
            self.core.create_namespaced_pod("wh-deny-bare", pod("refused"))
        self.assertEqual(bare.exception.status, 400)
        self.assertEqual(json.loads(bare.exception.body)["message"], 'admission webhook '
                         '"bare.gleaner.test" denied the request without explanation')

    def test_webhook_errors_follow_the_failure_policy(self):
        dead = "https://127.0.0.1:%d/" % closed_port()
        self.register("err-fail", "wh-fail", [{"name": "dead.gleaner.test", "url": dead}])
        with self.assertRaises(ApiException) as failed:
            self.core.create_namespaced_pod("wh-fail", pod("f1"))
        self.assertEqual(failed.exception.status, 500)
        status = json.loads(failed.exception.body)
        self.assertEqual(status["reason"], "InternalError")
        self.assertTrue(status["message"].startswith(
            'Internal error occurred: failed calling webhook "dead.gleaner.test": failed to '
            'call webhook: Post "%s?timeout=10s": ' % dead), status["message"])
        self.assertIn("connection refused", status["message"])

        self.webhook.behaviours["/after"] = self.label_patch("after", "yes")
        self.register("err-ignore", "wh-ignore", [
            {"name": "dead.gleaner.test", "url": dead, "failure_policy": "Ignore"},
            {"name": "after.gleaner.test", "path": "/after"}])
        admitted = self.core.create_namespaced_pod("wh-ignore", pod("i1", {"a": "b"}))
        self.assertEqual(admitted.metadata.labels, {"a": "b", "after": "yes"})

        # A certificate the caBundle does not vouch for, and a response for another request.
        self.webhook.behaviours["/wrong-uid"] = lambda review: review_answer(review, uid="nope")
        self.register("err-more", "wh-more", [
            {"name": "tls.gleaner.test", "path": "/label", "ca_bundle": self.other_ca_bundle}])
        with self.assertRaises(ApiException) as tls:
            self.core.create_namespaced_pod("wh-more", pod("t1"))
        self.assertEqual(tls.exception.status, 500)
        self.assertIn("x509", tls.exception.body)
        self.register("err-uid", "wh-uid", [{"name": "uid.gleaner.test", "path": "/wrong-uid"}])
        with self.assertRaises(ApiException) as uid:
            self.core.create_namespaced_pod("wh-uid", pod("u1"))
        self.assertEqual(uid.exception.status, 500)
        self.assertIn("received invalid webhook response: expected response.uid=",
                      uid.exception.body)

        # A patch that does not apply fails the request whatever the policy says.
        self.webhook.behaviours["/bad-patch"] = lambda review: review_answer(review, patch=[
            {"op": "replace", "path": "/spec/nonexistent/field", "value": 1}])
        self.register("err-patch", "wh-patch-bad", [{"name": "patch.gleaner.test",
                                                     "path": "/bad-patch",
                                                     "failure_policy": "Ignore"}])
        with self.assertRaises(ApiException) as patch_failed:
            self.core.create_namespaced_pod("wh-patch-bad", pod("p1"))
        self.assertEqual(patch_failed.exception.status, 500)
        self.assertEqual([c["outcome"] for c in self.calls("dead.gleaner.test")],
                         ["error", "error"])

    def test_webhook_timeout_is_honoured(self):
        def slow(review):
            self.webhook.release.wait(10)
            return review_answer(review, patch=[{"op": "add", "path": "/metadata/labels",
                                                 "value": {"slow": "yes"}}])
        self.webhook.behaviours["/slow"] = slow
        self.register("timeout-fail", "wh-slow", [{"name": "slow.gleaner.test", "path": "/slow",
                                                   "timeout_seconds": 1}])
        start = time.monotonic()
        with self.assertRaises(ApiException) as failed:
            self.core.create_namespaced_pod("wh-slow", pod("s1"))
        elapsed = time.monotonic() - start
        self.assertEqual(failed.exception.status, 500)
        self.assertIn("context deadline exceeded", failed.exception.body)
        self.assertIn("?timeout=1s", failed.exception.body)
        self.assertGreaterEqual(elapsed, 0.9)
        self.assertLess(elapsed, 5)
        self.register("timeout-ignore", "wh-slow-ignore", [{
            "name": "slow.gleaner.test", "path": "/slow", "timeout_seconds": 1,
            "failure_policy": "Ignore"}])
        admitted = self.core.create_namespaced_pod("wh-slow-ignore", pod("s2"))
        self.assertEqual(admitted.metadata.labels, {})

    def test_dry_run_create_is_admitted_but_not_stored(self):
        self.webhook.behaviours["/dry"] = self.label_patch("dry", "run")
        self.register("dry-config", "wh-dry", [{"name": "dry.gleaner.test", "path": "/dry",
                                                "side_effects": "NoneOnDryRun"}])
        before = self.admin_get("state")["resourceVersion"]
        created = self.core.create_namespaced_pod("wh-dry", pod("d1"), dry_run="All")
        self.assertEqual(created.metadata.labels, {"dry": "run"})
        self.assertTrue(created.metadata.uid)
        self.assertEqual(created.status.phase, "Pending")
        with self.assertRaises(ApiException) as gone:
            self.core.read_namespaced_pod("d1", "wh-dry")
        self.assertEqual(gone.exception.status, 404)
        self.assertEqual(self.admin_get("state")["resourceVersion"], before)
        req = self.webhook.reviews("/dry")[-1]["request"]
        self.assertTrue(req["dryRun"])
        self.assertEqual(req["options"]["dryRun"], ["All"])
        with self.assertRaises(ApiException) as bad:
            self.core.create_namespaced_pod("wh-dry", pod("d2"), dry_run="Sometimes")
        self.assertEqual(bad.exception.status, 422)

    def test_dry_run_refuses_webhooks_with_side_effects(self):
        # v1 validation admits only None and NoneOnDryRun, so such a webhook can only be
        # met in storage written before it; the dispatcher's check is exercised directly.
        sys.path.insert(0, HERE)
        from admission import Admission
        from store import ApiError, Store
        store = Store()
        store.create("mutatingwebhookconfigurations", None, {"metadata": {"name": "old"},
                     "webhooks": [{"name": "legacy.gleaner.test", "sideEffects": "Unknown",
                                   "admissionReviewVersions": ["v1"],
                                   "clientConfig": {"url": "https://127.0.0.1:1/"},
                                   "rules": [{"operations": ["*"], "apiGroups": ["*"],
                                              "apiVersions": ["*"], "resources": ["*"]}]}]})
        with self.assertRaises(ApiError) as refused:
            Admission(store).admit_pod("ns", {"metadata": {"name": "p"}, "spec": {}}, True,
                                       {}, [])
        self.assertEqual(refused.exception.code, 400)
        self.assertEqual(refused.exception.message,
                         'admission webhook "legacy.gleaner.test" does not support dry run')

    def test_reinvocation_of_if_needed_webhooks(self):
        def first(review):  # labels once; asks for nothing when it sees its label
            labels = review["request"]["object"]["metadata"].get("labels") or {}
            if "first" in labels:
                return review_answer(review)
            return self.label_patch("first", "1")(review)
        self.webhook.behaviours["/first"] = first
        self.webhook.behaviours["/second"] = self.label_patch("second", "2")
        self.webhook.behaviours["/never"] = lambda review: review_answer(review)
        # Configurations run in name order: reinvoke-a's webhooks before reinvoke-b's.
        self.register("reinvoke-b", "wh-reinvoke", [{"name": "second.gleaner.test",
                                                     "path": "/second"}])
        self.register("reinvoke-a", "wh-reinvoke", [
            {"name": "never.gleaner.test", "path": "/never"},
            {"name": "first.gleaner.test", "path": "/first", "reinvocation_policy": "IfNeeded"}])
        created = self.core.create_namespaced_pod("wh-reinvoke", pod("r1"))
        self.assertEqual(created.metadata.labels, {"first": "1", "second": "2"})
        rounds = [(c["webhook"], c["round"]) for c in self.admin_get("webhook-calls")["calls"]
                  if c["namespace"] == "wh-reinvoke"]
        self.assertEqual(rounds, [("never.gleaner.test", 0), ("first.gleaner.test", 0),
                                  ("second.gleaner.test", 0), ("first.gleaner.test", 1)])
        again = self.webhook.reviews("/first")[-1]["request"]["object"]["metadata"]["labels"]
        self.assertEqual(again, {"first": "1", "second": "2"})

    def test_priority_classes_resolve_pod_priority(self):
        self.scheduling.create_priority_class(client.V1PriorityClass(
            metadata=client.V1ObjectMeta(name="prio-free"), value=3500,
            preemption_policy="Never"))
        self.addCleanup(self.scheduling.delete_priority_class, "prio-free")
        body = pod("prio")
        body.spec.priority_class_name = "prio-free"
        created = self.core.create_namespaced_pod("prio", body)
        self.assertEqual((created.spec.priority, created.spec.preemption_policy),
                         (3500, "Never"))
        body = pod("prio-wrong")
        body.spec.priority_class_name, body.spec.priority = "prio-free", 9000
        with self.assertRaises(ApiException) as refused:
            self.core.create_namespaced_pod("prio", body)
        self.assertEqual(refused.exception.status, 403)
        self.assertIn("priority admission controller computed 3500", refused.exception.body)

    def test_leases_for_leader_election(self):
        # What a leader elector does: create, read, update with the resourceVersion; a
        # stale update conflicts.
        coord = client.CoordinationV1Api(self.api)
        created = coord.create_namespaced_lease("gleaner-system", client.V1Lease(
            metadata=client.V1ObjectMeta(name="gleaner-scheduler"),
            spec=client.V1LeaseSpec(holder_identity="a", lease_duration_seconds=15,
                                    lease_transitions=0)))
        self.addCleanup(coord.delete_namespaced_lease, "gleaner-scheduler", "gleaner-system")
        read = coord.read_namespaced_lease("gleaner-scheduler", "gleaner-system")
        self.assertEqual(read.spec.holder_identity, "a")
        read.spec.holder_identity, read.spec.lease_transitions = "b", 1
        updated = coord.replace_namespaced_lease("gleaner-scheduler", "gleaner-system", read)
        self.assertEqual(updated.spec.holder_identity, "b")
        created.spec.holder_identity = "c"
        with self.assertRaises(ApiException) as stale:
            coord.replace_namespaced_lease("gleaner-scheduler", "gleaner-system", created)
        self.assertEqual(stale.exception.status, 409)

    def test_rejects_missing_token(self):
        config = client.Configuration(host=self.api.configuration.host)
        with self.assertRaises(ApiException) as denied, client.ApiClient(config) as anonymous:
            client.CoreV1Api(anonymous).list_node()
        self.assertEqual(denied.exception.status, 401)


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1] + sys.argv[1:], verbosity=2)
