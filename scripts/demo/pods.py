"""The pods and files the live demo gives the agent in place of kubelet and an API server."""
import json
import os

NODE = "demo-node"


def pod_json(name, ns, uid, qos_class, requests, labels=None, priority=None):
    spec = {"nodeName": NODE, "containers": [{"name": "main", "resources": {"requests": requests}}]}
    if priority is not None:
        spec["priority"] = priority
    return {"metadata": {"name": name, "namespace": ns, "uid": uid, "labels": labels or {}},
            "spec": spec, "status": {"phase": "Running", "qosClass": qos_class}}


def write_json(path, value):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(value, f, indent=1)
    os.replace(tmp, path)  # the agent never sees a half-written file
