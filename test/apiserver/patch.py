"""JSON merge patch (RFC 7386), strategic merge patch and JSON patch (RFC 6902)."""

import copy


class PatchError(ValueError):
    pass


def merge_patch(target, patch):
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = copy.deepcopy(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


# Patch merge keys from the Kubernetes API types (x-kubernetes-patch-merge-key) for the
# lists our resources have; lists without one are replaced, as in the real server.
MERGE_KEYS = {
    "containers": "name", "initContainers": "name", "ephemeralContainers": "name",
    "env": "name", "volumes": "name", "volumeMounts": "mountPath", "ports": "containerPort",
    "conditions": "type", "taints": "key", "addresses": "type", "imagePullSecrets": "name",
    "containerStatuses": "name", "initContainerStatuses": "name", "ownerReferences": "uid",
}


def strategic_merge_patch(target, patch, field=None):
    if isinstance(patch, list):
        key = MERGE_KEYS.get(field)
        if key is None or not isinstance(target, list):
            return [strategic_merge_patch(None, p) for p in patch if not _is_delete(p)]
        result = copy.deepcopy(target)
        for item in patch:
            if not isinstance(item, dict) or key not in item:
                raise PatchError("map in list %s is missing merge key %r" % (field, key))
            index = next((i for i, t in enumerate(result)
                          if isinstance(t, dict) and t.get(key) == item[key]), None)
            if _is_delete(item):
                if index is not None:
                    result.pop(index)
            elif index is None:
                result.append(strategic_merge_patch(None, item))
            else:
                result[index] = strategic_merge_patch(result[index], item)
        return result
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    if patch.get("$patch") == "replace":
        return {k: copy.deepcopy(v) for k, v in patch.items() if k != "$patch"}
    result = copy.deepcopy(target) if isinstance(target, dict) else {}
    for k, value in patch.items():
        if k.startswith("$"):
            continue  # $retainKeys, $setElementOrder: ordering hints we do not need
        if value is None:
            result.pop(k, None)
        else:
            result[k] = strategic_merge_patch(result.get(k), value, k)
    return result


def _is_delete(item):
    return isinstance(item, dict) and item.get("$patch") == "delete"


def _pointer(path):
    if path == "":
        return []
    if not path.startswith("/"):
        raise PatchError("invalid JSON pointer %r" % path)
    return [p.replace("~1", "/").replace("~0", "~") for p in path[1:].split("/")]


def _walk(doc, parts):
    for p in parts:
        if isinstance(doc, list):
            doc = doc[int(p)]
        elif isinstance(doc, dict):
            doc = doc[p]
        else:
            raise KeyError(p)
    return doc


def json_patch(target, ops):
    if not isinstance(ops, list):
        raise PatchError("json patch must be a list of operations")
    doc = copy.deepcopy(target)
    for op in ops:
        try:
            kind, parts = op["op"], _pointer(op["path"])
            if kind in ("move", "copy"):
                value = copy.deepcopy(_walk(doc, _pointer(op["from"])))
                if kind == "move":
                    doc = _remove(doc, _pointer(op["from"]))
                doc = _add(doc, parts, value)
            elif kind == "add":
                doc = _add(doc, parts, copy.deepcopy(op["value"]))
            elif kind == "remove":
                doc = _remove(doc, parts)
            elif kind == "replace":
                doc = _remove(doc, parts)
                doc = _add(doc, parts, copy.deepcopy(op["value"]))
            elif kind == "test":
                if _walk(doc, parts) != op["value"]:
                    raise PatchError("testing value %s failed" % op["path"])
            else:
                raise PatchError("unexpected kind: %s" % kind)
        except (KeyError, IndexError, ValueError, TypeError) as e:
            if isinstance(e, PatchError):
                raise
            raise PatchError("doc is missing path: %s" % op.get("path")) from e
    return doc


def _add(doc, parts, value):
    if not parts:
        return value
    parent = _walk(doc, parts[:-1])
    last = parts[-1]
    if isinstance(parent, list):
        index = len(parent) if last == "-" else int(last)
        if not -len(parent) <= index <= len(parent):
            raise PatchError("unable to access invalid index: %d" % index)
        parent.insert(index, value)
    elif isinstance(parent, dict):
        parent[last] = value
    else:
        raise PatchError("cannot add to a scalar")
    return doc


def _remove(doc, parts):
    parent = _walk(doc, parts[:-1])
    last = parts[-1]
    if isinstance(parent, list):
        parent.pop(int(last))
    else:
        del parent[last]
    return doc
