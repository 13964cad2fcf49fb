"""The emulator's garbage collector: cascading deletion through ownerReferences."""

from kubernetes.client.rest import ApiException

from kubeapi import Actor, log


class GarbageCollector(Actor):
    """Background cascading deletion: when a pod or SparkApplication goes, the pods that
    name it in their ownerReferences go too (the driver's executors, an app's driver).

    A pod created after its owner went (a driver's last executor request in flight as the
    app is deleted) is collected too. Kubernetes' garbage collector does the same: a
    dependent whose owner is not in its graph gets a virtual owner node queued for
    attemptToDelete (graph_builder.go addDependentToOwners), and the owner is looked up
    live; not found, or found with another uid, it is dangling (garbagecollector.go
    isDangling), and a dependent whose owners all dangle is deleted."""

    def __init__(self, api, cache):
        super().__init__("garbage-collector")
        self.api, self.cache = api, cache
        cache.subscribe(self.on_cache_event)

    def on_cache_event(self, kind, etype, obj, old):
        if etype == "DELETED" and kind in ("pods", "sparkapplications"):
            self.post(self.collect, obj["metadata"].get("uid"))
        elif etype == "ADDED" and kind == "pods" and obj["metadata"].get("ownerReferences"):
            self.post(self.collect_if_orphaned, obj)

    def owner_absent(self, namespace, ref):
        read = {"Pod": self.api.get_pod, "SparkApplication": self.api.get_app}.get(
            ref.get("kind"))
        if read is None:
            return False  # a kind this collector does not watch: never judged absent
        try:
            return read(namespace, ref.get("name"))["metadata"].get("uid") != ref.get("uid")
        except ApiException as e:
            return e.status == 404

    def collect_if_orphaned(self, pod):
        meta = pod["metadata"]
        refs = meta.get("ownerReferences") or []
        if meta.get("deletionTimestamp") or not all(
                self.owner_absent(meta["namespace"], r) for r in refs):
            return
        log("garbage-collector", "deleting %s/%s: its owner %s was gone at its creation",
            meta["namespace"], meta["name"], ", ".join(str(r.get("uid")) for r in refs))
        self.delete(meta)

    def collect(self, owner_uid):
        for pod in self.cache.items("pods", lambda p: any(
                r.get("uid") == owner_uid for r in p["metadata"].get("ownerReferences") or [])):
            meta = pod["metadata"]
            if meta.get("deletionTimestamp"):
                continue
            log("garbage-collector", "deleting %s/%s: its owner %s is gone", meta["namespace"],
                meta["name"], owner_uid)
            self.delete(meta)

    def delete(self, meta):
        try:
            self.api.delete_pod(meta["namespace"], meta["name"], uid=meta.get("uid"))
        except ApiException as e:
            if e.status not in (404, 409):
                log("garbage-collector", "deleting %s failed: %s", meta["name"], e.status)
