"""Pod status conditions as the API server's own writes set them."""

from store import now_rfc3339


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
