#!/usr/bin/python3
"""Graceful pod deletion in the test API server, through the official Kubernetes Python
client: a bound pod is marked (MODIFIED, deletionTimestamp and deletionGracePeriodSeconds)
and stays until its node's kubelet deletes it with grace 0 and a UID precondition; a node
no kubelet serves (no Lease in kube-node-lease) has it finished at once; a second delete
may only shorten the grace period; a write to the marked pod leaves it in place."""

import datetime
import queue
import threading
import unittest

from kubernetes import client, watch
from kubernetes.client.rest import ApiException

from client_helpers import ServerTestCase, pod

NS = "graceful"


class GracefulDeletionTest(ServerTestCase):
    def bound_pod(self, name, node, grace=None):
        body = pod(name)
        body.spec.termination_grace_period_seconds = grace
        created = self.core.create_namespaced_pod(NS, body)
        self.core.create_namespaced_binding(NS, client.V1Binding(
            metadata=client.V1ObjectMeta(name=name),
            target=client.V1ObjectReference(kind="Node", name=node)), _preload_content=False)
        return created.metadata.uid

    def serve_node(self, node):
        """A kubelet's heartbeat for `node`: the server leaves its pods' deletion to it."""
        coord = client.CoordinationV1Api(self.api)
        coord.create_namespaced_lease("kube-node-lease", client.V1Lease(
            metadata=client.V1ObjectMeta(name=node),
            spec=client.V1LeaseSpec(holder_identity=node, lease_duration_seconds=40)))
        self.addCleanup(coord.delete_namespaced_lease, node, "kube-node-lease")

    def watch_pods(self, rv):
        """(type, deletionGracePeriodSeconds) of each pod event in NS from rv on, as seen."""
        events, w = queue.Queue(), watch.Watch()

        def run():
            for e in w.stream(self.core.list_namespaced_pod, NS, resource_version=rv,
                              timeout_seconds=20):
                events.put((e["type"], e["object"].metadata.deletion_grace_period_seconds))
        threading.Thread(target=run, daemon=True).start()
        self.addCleanup(w.stop)
        return events

    def gone(self, name):
        try:
            self.core.read_namespaced_pod(name, NS)
            return False
        except ApiException as e:
            return e.status == 404

    def test_a_bound_pod_stays_marked_until_its_kubelet_deletes_it_with_grace_0(self):
        self.serve_node("n-kubelet")
        uid = self.bound_pod("victim", "n-kubelet", grace=20)
        events = self.watch_pods(self.core.list_namespaced_pod(NS).metadata.resource_version)
        before = datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0)
        marked = self.core.delete_namespaced_pod("victim", NS)
        self.assertEqual(events.get(timeout=10), ("MODIFIED", 20))
        self.assertEqual(marked.metadata.deletion_grace_period_seconds, 20)
        self.assertGreaterEqual(marked.metadata.deletion_timestamp,
                                before + datetime.timedelta(seconds=20))
        # Still there, listed with its deletionTimestamp; a status write leaves it there.
        listed = [p for p in self.core.list_namespaced_pod(NS).items
                  if p.metadata.name == "victim"]
        self.assertEqual(len(listed), 1)
        self.assertIsNotNone(listed[0].metadata.deletion_timestamp)
        self.core.patch_namespaced_pod_status("victim", NS, {"status": {"phase": "Running"}})
        self.assertEqual(events.get(timeout=10), ("MODIFIED", 20))
        self.assertFalse(self.gone("victim"), "a write to a pod in its grace period removed it")
        # A second delete with a longer grace period changes nothing.
        again = self.core.delete_namespaced_pod("victim", NS, grace_period_seconds=60)
        self.assertEqual(again.metadata.deletion_grace_period_seconds, 20)
        # The kubelet, its containers stopped: grace 0 and the pod's UID (status_manager.go).
        with self.assertRaises(ApiException) as other:
            self.core.delete_namespaced_pod("victim", NS, body=client.V1DeleteOptions(
                grace_period_seconds=0, preconditions=client.V1Preconditions(uid="not-it")))
        self.assertEqual(other.exception.status, 409)
        self.core.delete_namespaced_pod("victim", NS, body=client.V1DeleteOptions(
            grace_period_seconds=0, preconditions=client.V1Preconditions(uid=uid)))
        self.assertEqual(events.get(timeout=10), ("MODIFIED", 0))
        self.assertEqual(events.get(timeout=10), ("DELETED", 0))
        self.assertTrue(self.gone("victim"))

    def test_a_shorter_grace_period_is_taken_and_the_default_is_30(self):
        self.serve_node("n-short")
        self.bound_pod("default-grace", "n-short")
        marked = self.core.delete_namespaced_pod("default-grace", NS)
        self.assertEqual(marked.metadata.deletion_grace_period_seconds, 30)
        shorter = self.core.delete_namespaced_pod("default-grace", NS, grace_period_seconds=5)
        self.assertEqual(shorter.metadata.deletion_grace_period_seconds, 5)
        self.assertEqual(shorter.metadata.deletion_timestamp,
                         marked.metadata.deletion_timestamp - datetime.timedelta(seconds=25),
                         "the shortened deletion keeps the first delete's start")
        self.assertFalse(self.gone("default-grace"))

    def test_unbound_and_kubelet_less_pods_go_at_once(self):
        self.core.create_namespaced_pod(NS, pod("pending"))
        self.core.delete_namespaced_pod("pending", NS, grace_period_seconds=30)
        self.assertTrue(self.gone("pending"), "a pod bound to no node has no grace period")
        self.bound_pod("fake-node", "n-no-kubelet", grace=30)
        self.core.delete_namespaced_pod("fake-node", NS)
        self.assertTrue(self.gone("fake-node"), "no kubelet serves n-no-kubelet")

    def test_an_eviction_is_a_graceful_delete(self):
        self.serve_node("n-evict")
        self.bound_pod("evicted", "n-evict", grace=10)
        self.core.create_namespaced_pod_eviction("evicted", NS, client.V1Eviction(
            metadata=client.V1ObjectMeta(name="evicted", namespace=NS)))
        self.assertEqual(self.core.read_namespaced_pod(
            "evicted", NS).metadata.deletion_grace_period_seconds, 10)

    def running(self, name):
        """The pod's status as its kubelet writes it once its containers run."""
        self.core.patch_namespaced_pod_status(name, NS, {"status": {"phase": "Running"}})

    def disruption_target(self, name):
        return next((c for c in self.core.read_namespaced_pod(name, NS).status.conditions or []
                     if c.type == "DisruptionTarget"), None)

    def test_an_eviction_marks_a_running_pod_a_disruption_target_before_deleting_it(self):
        self.serve_node("n-target")
        uid = self.bound_pod("target", "n-target", grace=10)
        self.running("target")
        rv = self.core.list_namespaced_pod(NS).metadata.resource_version
        events = []
        def record():
            w = watch.Watch()
            for e in w.stream(self.core.list_namespaced_pod, NS, resource_version=rv,
                              timeout_seconds=20):
                meta, conditions = e["object"].metadata, e["object"].status.conditions or []
                events.append((e["type"], bool(meta.deletion_timestamp), [
                    (c.type, c.status, c.reason) for c in conditions
                    if c.type == "DisruptionTarget"]))
                if meta.deletion_timestamp:
                    w.stop()
        watcher = threading.Thread(target=record, daemon=True)
        watcher.start()
        self.core.create_namespaced_pod_eviction("target", NS, client.V1Eviction(
            metadata=client.V1ObjectMeta(name="target", namespace=NS),
            delete_options=client.V1DeleteOptions(preconditions=client.V1Preconditions(
                uid=uid))))
        watcher.join(20)
        marked = [("DisruptionTarget", "True", "EvictionByEvictionAPI")]
        self.assertEqual(events, [("MODIFIED", False, marked), ("MODIFIED", True, marked)])
        self.assertEqual(self.disruption_target("target").message, "Eviction API: evicting")

    def test_an_eviction_checks_its_preconditions_before_marking_the_pod(self):
        self.serve_node("n-precondition")
        self.bound_pod("guarded", "n-precondition", grace=10)
        self.running("guarded")
        current = self.core.read_namespaced_pod("guarded", NS).metadata.resource_version
        for field in ("uid", "resource_version"):
            with self.assertRaises(ApiException) as refused:
                self.core.create_namespaced_pod_eviction("guarded", NS, client.V1Eviction(
                    metadata=client.V1ObjectMeta(name="guarded", namespace=NS),
                    delete_options=client.V1DeleteOptions(preconditions=client.V1Preconditions(
                        **{field: "not-this-one"}))))
            self.assertEqual(refused.exception.status, 409, field)
        self.assertIsNone(self.disruption_target("guarded"), "a refused eviction marked it")
        # The current resourceVersion holds across the eviction's own write of the condition.
        self.core.create_namespaced_pod_eviction("guarded", NS, client.V1Eviction(
            metadata=client.V1ObjectMeta(name="guarded", namespace=NS),
            delete_options=client.V1DeleteOptions(preconditions=client.V1Preconditions(
                resource_version=current))))
        self.assertIsNotNone(self.core.read_namespaced_pod("guarded", NS).metadata
                             .deletion_timestamp)

    def test_an_eviction_of_a_pending_pod_deletes_it_unmarked(self):
        self.serve_node("n-pending")
        self.bound_pod("pending-evicted", "n-pending", grace=10)
        self.core.create_namespaced_pod_eviction("pending-evicted", NS, client.V1Eviction(
            metadata=client.V1ObjectMeta(name="pending-evicted", namespace=NS)))
        self.assertIsNotNone(self.core.read_namespaced_pod("pending-evicted", NS).metadata
                             .deletion_timestamp)
        self.assertIsNone(self.disruption_target("pending-evicted"))

    def test_a_grace_period_that_is_no_number_is_refused(self):
        with self.assertRaises(ApiException) as bad:
            self.api.call_api("/api/v1/namespaces/%s/pods/x" % NS, "DELETE",
                              query_params=[("gracePeriodSeconds", "soon")],
                              auth_settings=["BearerToken"], _preload_content=False)
        self.assertEqual(bad.exception.status, 400)
        self.assertIn("gracePeriodSeconds", bad.exception.body.decode())


if __name__ == "__main__":
    unittest.main(verbosity=2)
