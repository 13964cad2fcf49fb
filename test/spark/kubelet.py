"""A kubelet for the emulator's nodes (admission as pkg/kubelet/lifecycle/predicate.go does
it, then running containers that exit when the emulated process says so; on a real node,
podruntime.py, as real processes in kubelet's cgroups) and the part of
kube-controller-manager's garbage collector the emulated objects need."""

import copy
import hashlib
import threading
import time

from kubernetes.client.rest import ApiException

import kubeapi
import podruntime
from kubeapi import Actor, log, now_rfc3339

DEFAULT_MAX_PODS = 110  # the kubelet's --max-pods default
SPARK_MAIN = ("spark-kubernetes-driver", "spark-kubernetes-executor", "executor")


def extended_resource(name):
    """v1helper.IsExtendedResourceName: outside the kubernetes.io/ namespace."""
    return "/" in name and "kubernetes.io/" not in name and not name.startswith("requests.")


def selector_matches(pod, node):
    """nodeSelector and requiredDuringScheduling node affinity (GetRequiredNodeAffinity)."""
    labels = (node.get("metadata") or {}).get("labels") or {}
    spec = pod.get("spec") or {}
    for k, v in (spec.get("nodeSelector") or {}).items():
        if labels.get(k) != v:
            return False
    required = (((spec.get("affinity") or {}).get("nodeAffinity") or {})
                .get("requiredDuringSchedulingIgnoredDuringExecution") or {})
    terms = required.get("nodeSelectorTerms") or []
    if not terms:
        return True
    fields = {"metadata.name": node["metadata"]["name"]}

    def expression_holds(expr, source):
        key, op, values = expr.get("key"), expr.get("operator"), expr.get("values") or []
        present, value = key in source, source.get(key)
        if op == "In":
            return present and value in values
        if op == "NotIn":
            return not present or value not in values
        if op == "Exists":
            return present
        if op == "DoesNotExist":
            return not present
        if op in ("Gt", "Lt") and present and values:
            try:
                a, b = int(value), int(values[0])
            except ValueError:
                return False
            return a > b if op == "Gt" else a < b
        return False

    for term in terms:
        exprs = term.get("matchExpressions") or []
        field_exprs = term.get("matchFields") or []
        if not exprs and not field_exprs:
            continue
        if all(expression_holds(e, labels) for e in exprs) and \
                all(expression_holds(e, fields) for e in field_exprs):
            return True
    return False


def tolerates(pod, taint):
    for t in (pod.get("spec") or {}).get("tolerations") or []:
        if t.get("effect") and t.get("effect") != taint.get("effect"):
            continue
        if t.get("operator") == "Exists":
            if not t.get("key") or t.get("key") == taint.get("key"):
                return True
        elif t.get("key") == taint.get("key") and t.get("value", "") == taint.get("value", ""):
            return True
    return False


class Kubelet(Actor):
    def __init__(self, api, cache, nodes=None):
        super().__init__("kubelet")
        self.api, self.cache = api, cache
        self.node_names = set(nodes) if nodes else None
        self.admitted = {}  # node -> {pod key: uid}
        self.handled = set()  # pod uids admitted or rejected
        self.waiting = {}  # node -> [pod keys] bound before we saw the Node
        self.ips = {}
        self.real = {}  # node -> podruntime.RealNode
        self.leased = set()  # nodes whose Lease we hold
        self.finishing = set()  # uids of deleted pods we delete again once stopped
        # An emulated container's process behind a preStop hook: on_pre_stop(pod, command)
        # delivers what the hook does to it and returns True when something runs there
        # (a Spark executor's JVM, sparkruntime.py); the container then exits on its own.
        self.on_pre_stop = None
        self.stopping = {}  # uid -> threading.Event set when its hooked container exited
        cache.subscribe(self.on_cache_event)

    def add_real_node(self, name, cgroup_root, log_dir=None):
        """Pods bound to `name` run as real processes in cgroups under `cgroup_root`."""
        def exited(pod, code, reason):  # called from the process's reaper thread
            self.post(self.container_exited, pod, code, reason)
        self.real[name] = podruntime.RealNode(name, cgroup_root, exited, log_dir)
        if self.node_names is not None:
            self.node_names.add(name)
        return self.real[name]

    def stop_real_nodes(self):
        for node in self.real.values():
            node.shutdown()

    def ours(self, node):
        if not node:
            return False
        if self.node_names is not None:
            return node in self.node_names
        return self.cache.get("nodes", (None, node)) is not None

    def on_cache_event(self, kind, etype, obj, old):
        if kind == "nodes" and etype != "DELETED":
            self.post(self.node_seen, obj["metadata"]["name"])
        elif kind == "pods":
            self.post(self.pod_event, etype, obj)

    def node_seen(self, name):
        node = self.cache.get("nodes", (None, name))
        if name not in self.leased and self.ours(name):
            self.hold_lease(name)
        cpu = ((node or {}).get("status") or {}).get("allocatable", {}).get("cpu")
        if name in self.real and cpu is not None:
            self.real[name].set_allocatable(kubeapi.quantity_value("cpu", cpu))
        for key in self.waiting.pop(name, []):
            pod = self.cache.get("pods", key)
            if pod is not None:
                self.pod_event("MODIFIED", pod)

    def pod_event(self, etype, pod):
        meta, spec = pod["metadata"], pod.get("spec") or {}
        node, uid, key = spec.get("nodeName"), meta.get("uid"), kubeapi.key_of(pod)
        phase = (pod.get("status") or {}).get("phase")
        stopped = None
        if node in self.real and (etype == "DELETED" or meta.get("deletionTimestamp") or
                                  phase in ("Succeeded", "Failed")):
            stopped = self.real[node].stop_pod(uid, podruntime.grace_of(pod))  # killPod
        if etype != "DELETED" and meta.get("deletionTimestamp") and self.ours(node):
            if node not in self.real:
                stopped = self.stop_emulated(pod)
            self.finish_deletion(pod, stopped)
        if etype == "DELETED":
            self.finishing.discard(uid)
            for pods in self.admitted.values():
                if pods.get(key) == uid:
                    del pods[key]
            self.handled.discard(uid)
            return
        if not self.ours(node):
            return
        if uid in self.handled:
            if phase in ("Succeeded", "Failed"):
                self.admitted.get(node, {}).pop(key, None)
            return
        if self.cache.get("nodes", (None, node)) is None:
            self.waiting.setdefault(node, []).append(key)
            return
        self.handled.add(uid)
        if phase != "Pending" or meta.get("deletionTimestamp"):
            if phase == "Running":  # running before we started: the kubelet restarted
                self.admitted.setdefault(node, {})[key] = uid
                if node in self.real and not meta.get("deletionTimestamp"):
                    self.run_real(pod, node, {s["name"]: s.get("containerID") for s in (
                        pod.get("status") or {}).get("containerStatuses") or []})
            return
        self.admit(pod, node)

    # --- deletion --------------------------------------------------------------------------
    def hold_lease(self, node):
        """Kubelet's heartbeat, the Lease named after its node in kube-node-lease
        (pkg/kubelet/kubelet.go's node lease controller); held, not renewed: the test API
        server reads it as "a kubelet runs here" and leaves this node's deleted pods to us."""
        try:
            self.api.create_node_lease(node)
        except ApiException as e:
            if e.status != 409:  # 409: held already (a kubelet before us)
                log("kubelet", "lease of %s not created: %s", node, e.status)
                return
        self.leased.add(node)

    def finish_deletion(self, pod, stopped):
        """A pod of ours marked for deletion: once its processes have stopped (SIGTERM,
        SIGKILL after the grace period, podruntime.RealNode.kill_pod; an emulated pod's at
        once), deleted again with grace 0 and its UID as a precondition, as kubelet's
        status manager does (pkg/kubelet/status/status_manager.go, canBeDeleted then
        syncPod). Only then does the API server remove it."""
        uid = pod["metadata"].get("uid")
        if uid in self.finishing:
            return
        self.finishing.add(uid)
        if stopped is None:
            return self.delete_stopped(pod)
        threading.Thread(target=lambda: (stopped.wait(), self.post(self.delete_stopped, pod)),
                         name="kubelet-stop-" + pod["metadata"]["name"], daemon=True).start()

    def stop_emulated(self, pod):
        """killContainer for an emulated pod (pkg/kubelet/kuberuntime/kuberuntime_container.go):
        a running container with a preStop exec hook has the hook run first, within the
        grace period; once it exits the pod is stopped. The grace period's end kills it
        (exit 137). Returns the Event set when it has stopped, or None: it stops at once
        (no hook, or nothing runs behind it)."""
        uid = pod["metadata"].get("uid")
        if uid in self.stopping:
            return self.stopping[uid]
        if (pod.get("status") or {}).get("phase") != "Running" or self.on_pre_stop is None:
            return None
        hooks = [(((c.get("lifecycle") or {}).get("preStop") or {}).get("exec") or {}).get(
            "command") for c in (pod.get("spec") or {}).get("containers") or []]
        command = next((h for h in hooks if h), None)
        if not command or not self.on_pre_stop(pod, command):
            return None
        self.stopping[uid] = stopped = threading.Event()
        log("kubelet", "%s/%s: preStop hook %s running (grace %ds)", pod["metadata"]["namespace"],
            pod["metadata"]["name"], " ".join(command), podruntime.grace_of(pod))
        self.call_later(podruntime.grace_of(pod), self.grace_over, pod)
        return stopped

    def grace_over(self, pod):
        stopped = self.stopping.get(pod["metadata"].get("uid"))
        if stopped is not None and not stopped.is_set():
            log("kubelet", "%s/%s outlived its %ds grace period; SIGKILL",
                pod["metadata"]["namespace"], pod["metadata"]["name"], podruntime.grace_of(pod))
            self.container_exited(pod, 137, "Error")

    def delete_stopped(self, pod):
        meta = pod["metadata"]
        try:
            self.api.delete_pod(meta["namespace"], meta["name"], uid=meta.get("uid"),
                                grace_period=0)
        except ApiException as e:
            if e.status not in (404, 409):  # 404, 409: gone already, or replaced
                log("kubelet", "deleting %s/%s after it stopped failed: %s; again in 1 s",
                    meta["namespace"], meta["name"], e.status)
                self.call_later(1.0, self.delete_stopped, pod)

    # --- admission -------------------------------------------------------------------------
    def admit(self, pod, node_name):
        node = self.cache.get("nodes", (None, node_name))
        allocatable = (node.get("status") or {}).get("allocatable") or {}
        others = []
        for key, uid in self.admitted.get(node_name, {}).items():
            other = self.cache.get("pods", key)
            if other is not None and other["metadata"].get("uid") == uid and \
                    (other.get("status") or {}).get("phase") not in ("Succeeded", "Failed"):
                others.append(other)
        failure = self.fits(pod, node, allocatable, others)
        if failure is not None:
            reason, message = failure
            self.reject(pod, node_name, reason, message)
            return
        self.admitted.setdefault(node_name, {})[kubeapi.key_of(pod)] = pod["metadata"]["uid"]
        self.start_pod(pod, node)

    def fits(self, pod, node, allocatable, others):
        """The first failure GeneralPredicates report: resources (noderesources.Fits:
        pods, cpu, memory, ephemeral-storage, then the scalar resources), node affinity,
        then NoExecute taints. Extended resources the node does not list are ignored."""
        request = {k: v for k, v in kubeapi.pod_requests(pod).items()
                   if not (extended_resource(k) and k not in allocatable)}
        used = {}
        for other in others:
            for k, v in kubeapi.pod_requests(other).items():
                used[k] = used.get(k, 0) + v
        max_pods = kubeapi.quantity_value("pods", allocatable["pods"]) if "pods" in allocatable \
            else DEFAULT_MAX_PODS
        if len(others) + 1 > max_pods:
            return self.insufficient("pods", 1, len(others), max_pods)
        order = ["cpu", "memory", "ephemeral-storage"] + sorted(
            k for k in request if k not in ("cpu", "memory", "ephemeral-storage", "pods"))
        for name in order:
            want = request.get(name, 0)
            if want <= 0:
                continue
            capacity = kubeapi.quantity_value(name, allocatable[name]) \
                if name in allocatable else 0
            if want > capacity - used.get(name, 0):
                return self.insufficient(name, want, used.get(name, 0), capacity)
        if not selector_matches(pod, node):
            return ("NodeAffinity", "Predicate NodeAffinity failed: node(s) didn't match "
                                    "Pod's node affinity/selector")
        for taint in (node.get("spec") or {}).get("taints") or []:
            if taint.get("effect") == "NoExecute" and not tolerates(pod, taint):
                return ("TaintToleration", "Predicate TaintToleration failed: node(s) had "
                                           "untolerated taint {%s: %s}"
                        % (taint.get("key"), taint.get("value", "")))
        return None

    @staticmethod
    def insufficient(name, requested, used, capacity):
        return ("OutOf" + name, "Node didn't have enough resource: %s, requested: %d, used: "
                                "%d, capacity: %d" % (name, requested, used, capacity))

    def reject(self, pod, node, reason, message):
        """Kubelet.rejectPod: a Warning event and the pod Failed."""
        meta = pod["metadata"]
        log("kubelet", "rejecting %s/%s on %s: %s %s", meta["namespace"], meta["name"], node,
            reason, message)
        self.record_event(pod, node, reason, message)
        self.patch_status(pod, {"status": {"phase": "Failed", "reason": reason,
                                           "message": "Pod was rejected: " + message}})

    def record_event(self, pod, node, reason, message):
        meta = pod["metadata"]
        stamp = now_rfc3339()
        event = {"apiVersion": "v1", "kind": "Event",
                 "metadata": {"name": "%s.%x" % (meta["name"], time.time_ns()),
                              "namespace": meta["namespace"]},
                 "involvedObject": {"apiVersion": "v1", "kind": "Pod", "name": meta["name"],
                                    "namespace": meta["namespace"], "uid": meta.get("uid"),
                                    "resourceVersion": meta.get("resourceVersion")},
                 "reason": reason, "message": message, "type": "Warning",
                 "source": {"component": "kubelet", "host": node},
                 "firstTimestamp": stamp, "lastTimestamp": stamp, "count": 1,
                 "reportingComponent": "kubelet", "reportingInstance": node}
        try:
            self.api.create_event(meta["namespace"], event)
        except ApiException as e:
            log("kubelet", "event for %s not recorded: %s", meta["name"], e.status)

    # --- running ---------------------------------------------------------------------------
    def pod_ip(self, node_name):
        index = sorted(n["metadata"]["name"] for n in self.cache.items("nodes")).index(
            node_name) if self.cache.get("nodes", (None, node_name)) else 0
        n = self.ips.get(node_name, 1) + 1
        self.ips[node_name] = n
        return "10.244.%d.%d" % (index % 256, n % 254 + 1)

    @staticmethod
    def host_ip(node):
        for address in (node.get("status") or {}).get("addresses") or []:
            if address.get("type") == "InternalIP":
                return address.get("address")
        digest = hashlib.sha1(node["metadata"]["name"].encode()).digest()
        return "192.168.%d.%d" % (digest[0], digest[1] % 254 + 1)

    def start_pod(self, pod, node):
        stamp = now_rfc3339()
        ip, host = self.pod_ip(node["metadata"]["name"]), self.host_ip(node)
        spec = pod.get("spec") or {}

        def container_id(name):
            return "containerd://" + hashlib.sha256(
                (pod["metadata"]["uid"] + name).encode()).hexdigest()

        statuses = [{"name": c["name"], "image": c.get("image", ""),
                     "imageID": "docker.io/library/%s@sha256:%s" % (
                         c.get("image", ""), hashlib.sha256(
                             str(c.get("image")).encode()).hexdigest()),
                     "containerID": container_id(c["name"]), "ready": True, "started": True,
                     "restartCount": 0, "state": {"running": {"startedAt": stamp}},
                     "lastState": {}} for c in spec.get("containers") or []]
        init = [{"name": c["name"], "image": c.get("image", ""), "imageID": "",
                 "containerID": container_id(c["name"]), "ready": True, "restartCount": 0,
                 "started": False, "state": {"terminated": {
                     "exitCode": 0, "reason": "Completed", "startedAt": stamp,
                     "finishedAt": stamp, "containerID": container_id(c["name"])}},
                 "lastState": {}} for c in spec.get("initContainers") or []]
        conditions = [{"type": t, "status": "True", "lastProbeTime": None,
                       "lastTransitionTime": stamp}
                      for t in ("PodReadyToStartContainers", "Initialized", "Ready",
                                "ContainersReady")]
        status = {"phase": "Running", "conditions": conditions, "hostIP": host,
                  "hostIPs": [{"ip": host}], "podIP": ip, "podIPs": [{"ip": ip}],
                  "startTime": stamp, "containerStatuses": statuses}
        if init:
            status["initContainerStatuses"] = init
        if node["metadata"]["name"] in self.real and not self.run_real(
                pod, node["metadata"]["name"], {s["name"]: s["containerID"] for s in statuses}):
            return
        self.patch_status(pod, {"status": status})

    def run_real(self, pod, node, container_ids):
        """The pod's cgroups and processes on a real node; false (a Warning event, the pod
        left Pending, as kubelet leaves a pod whose sandbox it cannot make) if that failed."""
        try:
            self.real[node].start_pod(pod, container_ids)
            return True
        except (OSError, KeyError, IndexError, ValueError) as e:
            self.real[node].stop_pod(pod["metadata"]["uid"], 0)
            self.record_event(pod, node, "FailedCreatePodContainer",
                              "unable to ensure pod container exists: %s" % e)
            return False

    def run_task(self, pod, seconds, memory):
        """A Spark driver hands a task to an executor: on a real node its process works."""
        node = self.real.get((pod.get("spec") or {}).get("nodeName"))
        if node is not None:
            node.run_task(pod["metadata"].get("uid"), seconds, memory)

    def container_exited(self, pod, exit_code, reason):
        """The emulated process in the pod's main container (Spark's, by its usual names,
        else the last) exited; the others are stopped with it, so the pod ends."""
        try:
            self.record_exit(pod, exit_code, reason)
        finally:  # a pod stopping behind its preStop hook has stopped, whatever was written
            stopped = self.stopping.pop(pod["metadata"].get("uid"), None)
            if stopped is not None:
                stopped.set()

    def record_exit(self, pod, exit_code, reason):
        current = self.cache.get("pods", kubeapi.key_of(pod))
        if current is None or current["metadata"].get("uid") != pod["metadata"].get("uid"):
            return
        status = current.get("status") or {}
        if status.get("phase") in ("Succeeded", "Failed"):
            return
        stamp = now_rfc3339()
        containers = (current.get("spec") or {}).get("containers") or []
        main_index = next((i for i, c in enumerate(containers) if c.get("name") in SPARK_MAIN),
                          len(containers) - 1)
        statuses = []
        for i, c in enumerate(containers):
            old = next((s for s in status.get("containerStatuses") or []
                        if s.get("name") == c["name"]), {})
            main = i == main_index
            started = ((old.get("state") or {}).get("running") or {}).get("startedAt", stamp)
            statuses.append({"name": c["name"], "image": c.get("image", ""),
                             "imageID": old.get("imageID", ""),
                             "containerID": old.get("containerID", ""), "ready": False,
                             "started": False, "restartCount": 0, "lastState": {},
                             "state": {"terminated": {
                                 "exitCode": exit_code if main else 143,
                                 "reason": reason if main else "Error", "startedAt": started,
                                 "finishedAt": stamp,
                                 "containerID": old.get("containerID", "")}}})
        phase = "Succeeded" if exit_code == 0 else "Failed"
        conditions = [{"type": t, "status": "False", "lastProbeTime": None,
                       "lastTransitionTime": stamp,
                       "reason": "PodCompleted" if phase == "Succeeded" else "PodFailed"}
                      for t in ("Ready", "ContainersReady")]
        self.patch_status(current, {"status": {"phase": phase, "conditions": conditions,
                                               "containerStatuses": statuses}})
        self.admitted.get((current.get("spec") or {}).get("nodeName"), {}).pop(
            kubeapi.key_of(current), None)

    def patch_status(self, pod, patch):
        meta = pod["metadata"]
        patch = copy.deepcopy(patch)
        patch.setdefault("metadata", {})["uid"] = meta.get("uid")  # not someone else's pod
        try:
            self.api.patch_pod_status(meta["namespace"], meta["name"], patch)
        except ApiException as e:
            log("kubelet", "status of %s/%s not written: %s", meta["namespace"], meta["name"],
                e.status)
