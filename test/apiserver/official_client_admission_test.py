#!/usr/bin/python3
"""Drives the test API server's pod admission with the official Kubernetes Python client:
MutatingWebhookConfigurations defaulted and validated, webhooks (an HTTPS server in this
process, with a throwaway certificate made by the openssl CLI) called as kube-apiserver
calls them, and the Priority plugin resolving PriorityClasses."""

import json
import shutil
import sys
import tempfile
import time
import unittest

from kubernetes import client
from kubernetes.client.rest import ApiException

from client_helpers import HERE, ServerTestCase, make_certificate, pod
from webhook_server import WebhookServer, closed_port, review_answer


class AdmissionTest(ServerTestCase):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.tmp = tempfile.mkdtemp(prefix="apiserver-webhook-")
        cert, key, cls.ca_bundle = make_certificate(
            cls.tmp, "webhook", ["IP:127.0.0.1", "DNS:mutator.webhooks.svc"])
        _, _, cls.other_ca_bundle = make_certificate(cls.tmp, "stranger", ["IP:127.0.0.1"])
        cls.webhook = WebhookServer(cert, key)

    @classmethod
    def tearDownClass(cls):
        cls.webhook.stop()
        shutil.rmtree(cls.tmp, ignore_errors=True)
        super().tearDownClass()

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

    def test_webhook_output_is_validated_as_the_api_server_validates_resources(self):
        """A webhook's resources pass the API server's ValidateResourceRequirements after
        the mutation: kubernetes.io/ names may have a limit above the request (native,
        IsOvercommitAllowed), other extended resources need request equal to limit."""
        def resources_patch(requests, limits):
            return lambda review: review_answer(review, patch=[
                {"op": "add", "path": "/spec/containers/0/resources",
                 "value": {"requests": requests, "limits": limits}}])
        cases = {
            "/batch-overcommit": ({"kubernetes.io/batch-cpu": "1000"},
                                  {"kubernetes.io/batch-cpu": "1200"}, None),
            "/batch-request-only": ({"kubernetes.io/batch-cpu": "1000"}, {}, None),
            "/batch-above-limit": ({"kubernetes.io/batch-cpu": "1500"},
                                   {"kubernetes.io/batch-cpu": "1200"},
                                   "spec.containers[0].resources.requests[kubernetes.io/batch-"
                                   "cpu]: Invalid value: \"1500\": must be less than or equal "
                                   "to kubernetes.io/batch-cpu limit of 1200"),
            "/device-overcommit": ({"example.com/dev": "1"}, {"example.com/dev": "2"},
                                   "must be equal to example.com/dev limit of 2"),
            "/device-request-only": ({"example.com/dev": "1"}, {},
                                     "spec.containers[0].resources.limits[example.com/dev]: "
                                     "Required value: Limit must be set for non overcommitable "
                                     "resources"),
        }
        for i, (path, (requests, limits, refusal)) in enumerate(sorted(cases.items())):
            with self.subTest(path):
                self.webhook.behaviours[path] = resources_patch(requests, limits)
                ns = "wh-res-%d" % i
                self.register("res-config-%d" % i, ns, [{"name": "res.gleaner.test",
                                                         "path": path}])
                if refusal is None:
                    created = self.core.create_namespaced_pod(ns, pod("p"))
                    self.assertEqual(created.spec.containers[0].resources.limits, limits)
                    continue
                with self.assertRaises(ApiException) as refused:
                    self.core.create_namespaced_pod(ns, pod("p"))
                self.assertEqual(refused.exception.status, 422)
                self.assertIn(refusal, json.loads(refused.exception.body)["message"])

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


if __name__ == "__main__":
    unittest.main(verbosity=2)
