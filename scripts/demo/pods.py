"""The pods and files the live demo gives the agent in place of kubelet and an API server."""
import json
import os

NODE = "demo-node"
# deploy/manifests/slo-config/ack-slo-config.yaml's cpuSuppressMode, which the demo runs.
SHIPPED_MODE = "slo"


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


def write_agent_files(run_dir, config_dir, node_file, memory, cpu_evict):
    """The agent's ack-slo-config in `config_dir` (colocation on, cfsQuota suppression in the
    shipped mode with the threshold at 65 %, memory eviction at 70 %, and with `cpu_evict` BE CPU eviction below 30 %
    satisfaction) and the Node file `node_file` (`memory`: its capacity, a quantity)."""
    cfg = os.path.join(run_dir, config_dir)
    os.makedirs(cfg, exist_ok=True)
    write_json(os.path.join(cfg, "colocation-config"), {
        "enable": True, "metricAggregateDurationSeconds": 10,
        "cpuReclaimThresholdPercent": 65, "memoryReclaimThresholdPercent": 65,
        "memoryCalculatePolicy": "usage"})
    # The shipped mode: BE's CPU steered by LS's run-queue wait (cpuSuppressMode slo).
    strategy = {"enable": True, "cpuSuppressThresholdPercent": 65,
                "cpuSuppressPolicy": "cfsQuota", "cpuSuppressMode": SHIPPED_MODE,
                "memoryEvictThresholdPercent": 70}
    if cpu_evict:
        strategy.update({"cpuEvictBESatisfactionLowerPercent": 30,
                         "cpuEvictBESatisfactionUpperPercent": 50,
                         "cpuEvictBEUsageThresholdPercent": 90})
    write_json(os.path.join(cfg, "resource-threshold-config"), {"clusterStrategy": strategy})
    cap = {"cpu": str(os.cpu_count()), "memory": memory, "pods": "110"}
    write_json(os.path.join(run_dir, node_file), {
        "apiVersion": "v1", "kind": "Node", "metadata": {"name": NODE},
        "status": {"capacity": cap, "allocatable": cap}})
