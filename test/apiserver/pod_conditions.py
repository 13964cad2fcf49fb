"""Pod status conditions as the API server's own writes set them."""

from store import ApiError, now_rfc3339


def update_pod_condition(status, condition):
    """Sets `condition` in status.conditions, replacing one of its type, as
    podutil.UpdatePodCondition does (pkg/api/v1/pod/util.go): lastTransitionTime moves
    only when the status changes. Returns whether anything changed."""
    conditions = status.setdefault("conditions", [])
    old = next((c for c in conditions if c.get("type") == condition["type"]), None)
    new = dict(condition)
    now = now_rfc3339()
    if old is None:
        new.setdefault("lastTransitionTime", now)
        conditions.append(new)
        return True
    new["lastTransitionTime"] = now if old.get("status") != new.get("status") else \
        old.get("lastTransitionTime")
    changed = any(old.get(k) != new.get(k) for k in ("status", "reason", "message"))
    conditions[conditions.index(old)] = new
    return changed


def can_ignore_disruption_budget(pod):
    """The pods an eviction deletes at once, with no budget check and no DisruptionTarget
    condition: terminal, pending, or already being deleted (eviction.go canIgnorePDB)."""
    return (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed", "Pending") or \
        bool(pod["metadata"].get("deletionTimestamp"))


def mark_disruption_target(store, ns, name, preconditions):
    """kube-apiserver's eviction writes the pod's DisruptionTarget condition (True,
    EvictionByEvictionAPI) in its own update before the delete, checking the delete's uid and
    resourceVersion preconditions against the latest pod there, and moves a resourceVersion
    precondition to the version its update wrote (pkg/registry/core/pod/storage/eviction.go
    addConditionAndDeletePod: getLatestPod, conditionAppender). A watcher sees the pod
    MODIFIED with the condition, then marked for deletion. Returns the delete's
    preconditions."""
    def append_condition(latest):
        meta = latest["metadata"]
        for field, key in (("uid", "UID"), ("resourceVersion", "ResourceVersion")):
            want = preconditions.get(field)
            if want not in (None, "") and want != meta.get(field):
                raise ApiError(409, "Conflict", 'Operation cannot be fulfilled on Pod "%s": the '
                               "%s in the precondition (%s) does not match the %s in record "
                               "(%s)" % (name, key, want, key, meta.get(field)),
                               {"name": name, "kind": "Pod"})
        update_pod_condition(latest.setdefault("status", {}), {
            "type": "DisruptionTarget", "status": "True", "reason": "EvictionByEvictionAPI",
            "message": "Eviction API: evicting"})
        return latest

    updated = store.update("pods", ns, name, append_condition)
    if preconditions.get("resourceVersion") in (None, ""):
        return preconditions
    return dict(preconditions, resourceVersion=updated["metadata"]["resourceVersion"])
