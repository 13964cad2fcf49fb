#!/usr/bin/python3
"""Drives the test API server with the official Kubernetes Python client, so the stand-in
answers what real clients expect and not only our own client's reading of the API: pods
created, listed with selectors and pages, watched, bound and evicted; errors as Status
objects; nodes, events, DaemonSets, leases, custom resources, preconditions, finalizers,
and the Namespaces, Secrets and PriorityClasses Gleaner's admission needs."""

import base64
import json
import threading
import unittest

from kubernetes import client, watch
from kubernetes.client.rest import ApiException

from client_helpers import ServerTestCase, pod


class ObjectsTest(ServerTestCase):
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
        # The delete of a pod bound to no node is written marked (grace 0), then removed.
        self.assertEqual([t for t in seen if t != "BOOKMARK"],
                         ["ADDED", "MODIFIED", "MODIFIED", "DELETED"])

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

    def test_propagation_policies_of_a_fleet_hub(self):
        # Karmada's and ACK One Fleet's groups, namespaced and cluster-scoped, as the
        # scheduler's hub link lists and watches them.
        for group in ("policy.karmada.io", "policy.one.alibabacloud.com"):
            pp = {"apiVersion": group + "/v1alpha1", "kind": "PropagationPolicy",
                  "metadata": {"name": "sparkapp-policy"},
                  "spec": {"resourceSelectors": [{"apiVersion": "sparkoperator.k8s.io/v1beta2",
                                                  "kind": "SparkApplication"}],
                           "placement": {"clusterAffinity": {"clusterNames": ["c1"]}}}}
            self.custom.create_namespaced_custom_object(group, "v1alpha1", "spark",
                                                        "propagationpolicies", pp)
            got = self.custom.list_cluster_custom_object(group, "v1alpha1", "propagationpolicies")
            self.assertEqual([(p["metadata"]["namespace"], p["spec"]["placement"])
                              for p in got["items"]],
                             [("spark", {"clusterAffinity": {"clusterNames": ["c1"]}})])
            cpp = dict(pp, kind="ClusterPropagationPolicy", metadata={"name": "priority-policy"})
            self.custom.create_cluster_custom_object(group, "v1alpha1",
                                                     "clusterpropagationpolicies", cpp)
            listed = self.custom.list_cluster_custom_object(group, "v1alpha1",
                                                            "clusterpropagationpolicies")
            self.assertEqual([c["metadata"]["name"] for c in listed["items"]],
                             ["priority-policy"])
            self.assertNotIn("namespace", listed["items"][0]["metadata"])

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
    unittest.main(verbosity=2)
