"""The container runtime of a real emulated node: each pod gets its cgroups (podcgroups.py)
and each container a real process (workload.py) started inside its container cgroup.
Stopping a pod is kubelet's killPod: SIGTERM, SIGKILL once the grace period is over, then
the pod cgroup removed. A process that exits on its own is reported back to the kubelet."""

import os
import select
import signal
import subprocess
import threading
import time

import kubeapi
from kubeapi import log
from podcgroups import (CgroupTree, container_config, milli_cpu_to_shares, pod_config, qos_class,
                        shares_to_weight)

HERE = os.path.dirname(os.path.abspath(__file__))
WORKLOAD = os.path.join(HERE, "workload.py")
WORKLOAD_ANNOTATION = "kubelet-emulator.gleaner.io/workload"
IGNORE_SIGTERM_ANNOTATION = "kubelet-emulator.gleaner.io/ignore-sigterm"
EXECUTOR_CONTAINERS = ("spark-kubernetes-executor", "executor")
DEFAULT_GRACE = 30  # terminationGracePeriodSeconds' default
PLACEMENT_TIMEOUT = 10.0  # seconds for a new process to enter its cgroups (a busy machine)


def workload_of(pod, container):
    """The annotation's kind if given, else by Spark's role label: the executor container
    of an executor pod is an executor, the rest of a Spark pod idles; other pods serve."""
    given = ((pod["metadata"].get("annotations") or {}).get(WORKLOAD_ANNOTATION) or "").strip()
    if given:
        return given
    role = kubeapi.labels_of(pod).get("spark-role")
    if role == "executor" and container["name"] in EXECUTOR_CONTAINERS:
        return "executor"
    return "idle" if role else "ls-service"


def grace_of(pod):
    meta, spec = pod["metadata"], pod.get("spec") or {}
    for value in (meta.get("deletionGracePeriodSeconds"),
                  spec.get("terminationGracePeriodSeconds")):
        if value is not None:
            return max(0, int(value))
    return DEFAULT_GRACE


class Container:
    def __init__(self, name, cgroup, proc):
        self.name, self.cgroup, self.proc = name, cgroup, proc
        self.stopping = False


class RealNode:
    def __init__(self, name, cgroup_root, on_exit, log_dir=None):
        self.name, self.on_exit, self.log_dir = name, on_exit, log_dir
        self.tree = CgroupTree(cgroup_root)
        self.lock = threading.Lock()
        self.pods = {}  # uid -> (pod, {container name: Container})
        self.stopped = {}  # uid -> threading.Event set once its cgroups are gone
        self.tree.make("kubepods")
        for qos in ("Burstable", "BestEffort"):
            self.tree.make(self.tree.qos_dir(qos))
        self.tree.write("kubepods/besteffort", *self.weight_file(2))

    def weight_file(self, shares):
        if self.tree.v2:
            return "cpu.weight", shares_to_weight(shares)
        return "cpu.shares", shares

    def set_allocatable(self, milli_cpu):
        """kubepods is the node allocatable cgroup: shares from allocatable cpu (kubelet's
        enforceNodeAllocatableCgroups, pkg/kubelet/cm/node_container_manager_linux.go, with
        its default --enforce-node-allocatable=pods)."""
        self.tree.write("kubepods", *self.weight_file(milli_cpu_to_shares(milli_cpu)))

    def update_burstable(self):
        """The burstable QoS cgroup weighs as much as its pods request (kubelet's
        qosContainerManager.setCPUCgroupConfig)."""
        with self.lock:
            milli = sum(kubeapi.pod_requests(pod).get("cpu", 0) for pod, _ in
                        self.pods.values() if qos_class(pod) == "Burstable")
        self.tree.write("kubepods/burstable", *self.weight_file(milli_cpu_to_shares(milli)))

    # --- starting -------------------------------------------------------------------------
    def start_pod(self, pod, container_ids):
        """Cgroups and processes for `pod`; container_ids: name -> "runtime://hex"."""
        uid, qos = pod["metadata"]["uid"], qos_class(pod)
        pod_dir = self.tree.pod_dir(qos, uid)
        containers = {}
        with self.lock:  # first: a failure below is undone by stop_pod
            self.pods[uid] = (pod, containers)
        self.tree.make(pod_dir)
        self.tree.apply(pod_dir, pod_config(pod))
        for c in (pod.get("spec") or {}).get("containers") or []:
            cgroup = pod_dir + "/" + container_ids[c["name"]].split("://", 1)[1]
            self.tree.make(cgroup)
            self.tree.apply(cgroup, container_config(c))
            proc = self.spawn(pod, c, cgroup)
            containers[c["name"]] = Container(c["name"], cgroup, proc)
            threading.Thread(target=self.reap, args=(pod, containers[c["name"]]),
                             daemon=True).start()
        self.update_burstable()
        log("kubelet", "%s: pod %s (%s) runs %s in %s", self.name, pod["metadata"]["name"], qos,
            {n: c.proc.pid for n, c in containers.items()}, pod_dir)

    def spawn(self, pod, container, cgroup):
        """A shell that puts itself into the container cgroup of every controller and then
        becomes the workload: the process is inside from its first instruction."""
        kind = workload_of(pod, container)
        argv = ["/usr/bin/python3", WORKLOAD, kind]
        if kind == "ls-service":
            ports = [p.get("hostPort") for p in container.get("ports") or [] if p.get("hostPort")]
            argv += ["--port", str(ports[0] if ports else 0)]
        if (pod["metadata"].get("annotations") or {}).get(IGNORE_SIGTERM_ANNOTATION) == "true":
            argv.append("--ignore-sigterm")
        procs = [os.path.join(self.tree.path(cgroup, c), "cgroup.procs")
                 for c in self.tree.controllers]
        out = subprocess.DEVNULL
        if self.log_dir:
            out = open(os.path.join(self.log_dir, "%s_%s_%s.log" % (
                pod["metadata"].get("namespace"), pod["metadata"]["name"], container["name"])),
                "ab")
        # The shell (bash: dash takes no fd above 9) joins every controller, then says so on a
        # pipe and closes it before it becomes the workload: the runtime's start returns only
        # once the process is in its cgroups, as runc's does (the container's init joins them
        # before it execs). A shell that fails to join exits, and the pipe reads end of file.
        placed_r, placed_w = os.pipe()
        script = ('for f in %s; do echo $$ > "$f" || exit 126; done; '
                  'echo placed >&%d; exec %d>&-; exec "$@"') % (
                      " ".join("'%s'" % p for p in procs), placed_w, placed_w)
        try:
            proc = subprocess.Popen(["/bin/bash", "-c", script, "bash"] + argv,
                                    stdin=subprocess.PIPE, stdout=out, stderr=out,
                                    start_new_session=True, pass_fds=(placed_w,))
        finally:
            os.close(placed_w)
            if out is not subprocess.DEVNULL:
                out.close()
        try:
            ready, _, _ = select.select([placed_r], [], [], PLACEMENT_TIMEOUT)
            placed = bool(ready) and os.read(placed_r, 16) == b"placed\n"
        finally:
            os.close(placed_r)
        if not placed:  # the shell failed to join one (exit 126) or never got the CPU
            proc.kill()
            proc.wait()
            raise OSError("the process of container %s did not enter %s (exit code %s)"
                          % (container["name"], cgroup, proc.returncode))
        return proc

    def run_task(self, uid, seconds, memory):
        with self.lock:
            entry = self.pods.get(uid)
        for c in (entry[1].values() if entry else []):
            if workload_of(entry[0], {"name": c.name}) == "executor" and not c.stopping:
                try:
                    c.proc.stdin.write(b"task %.3f %d\n" % (seconds, memory))
                    c.proc.stdin.flush()
                except (BrokenPipeError, ValueError):
                    pass  # it exited: the reaper reports it

    def reap(self, pod, container):
        code = container.proc.wait()
        if container.stopping:
            return
        exit_code = 128 - code if code < 0 else code
        reason = "Completed" if exit_code == 0 else "Error"
        if exit_code == 137 and self.oom_killed(container.cgroup):
            reason = "OOMKilled"
        log("kubelet", "%s: container %s of %s exited with %d (%s)", self.name, container.name,
            pod["metadata"]["name"], exit_code, reason)
        self.on_exit(pod, exit_code, reason)

    def oom_killed(self, cgroup):
        name, controller = ("memory.events", "") if self.tree.v2 else ("memory.oom_control",
                                                                       "memory")
        try:
            with open(os.path.join(self.tree.path(cgroup, controller), name)) as f:
                return any(line.split()[0] == "oom_kill" and int(line.split()[1]) > 0
                           for line in f if line.strip())
        except (OSError, ValueError, IndexError):
            return False

    # --- stopping -------------------------------------------------------------------------
    def stop_pod(self, uid, grace):
        """killPod in the background: returns at once; the event is set once the pod's
        processes are gone and its cgroups removed."""
        with self.lock:
            entry = self.pods.pop(uid, None)
            if entry is None:
                return self.stopped.get(uid)
            done = self.stopped[uid] = threading.Event()
        threading.Thread(target=self.kill_pod, args=(entry, grace, done), daemon=True).start()
        return done

    def kill_pod(self, entry, grace, done):
        pod, containers = entry
        began = time.monotonic()
        try:
            for c in containers.values():
                c.stopping = True
            grace = self.run_pre_stop_hooks(pod, containers, grace)
            for c in containers.values():
                self.send(c, signal.SIGTERM)
            deadline = time.monotonic() + grace
            for c in containers.values():
                try:
                    c.proc.wait(max(0.0, deadline - time.monotonic()))
                except subprocess.TimeoutExpired:
                    log("kubelet", "%s: %s of %s outlived its %ds grace period; SIGKILL",
                        self.name, c.name, pod["metadata"]["name"], grace)
                    self.send(c, signal.SIGKILL)
                    c.proc.wait(10)
            qos = qos_class(pod)
            self.tree.remove(self.tree.pod_dir(qos, pod["metadata"]["uid"]))
            self.update_burstable()
            if time.monotonic() - began > 1.0 + grace:  # slow beyond its grace: say so
                log("kubelet", "%s: %s stopped and its cgroups removed in %.2f s", self.name,
                    pod["metadata"]["name"], time.monotonic() - began)
        except Exception as e:  # noqa: BLE001 - reported; the pod's cgroups may remain
            log("kubelet", "%s: stopping %s failed: %r", self.name, pod["metadata"]["name"], e)
        finally:
            done.set()

    def run_pre_stop_hooks(self, pod, containers, grace):
        """killContainer's first step (pkg/kubelet/kuberuntime/kuberuntime_container.go): a
        container's preStop exec hook runs within the grace period, and what is left of it
        (at least 2 s, minimumGracePeriodInSeconds) goes to SIGTERM and SIGKILL. The one
        hook modelled is Spark's decommission script (decom.sh: SIGPWR to the executor,
        then wait for it to exit); an executor that exits during it has its exit recorded
        as kubelet records it before the pod goes. Returns the grace left."""
        spec = {c.get("name"): c for c in (pod.get("spec") or {}).get("containers") or []}
        hooked = [c for name, c in containers.items()
                  if (((spec.get(name, {}).get("lifecycle") or {}).get("preStop") or {}).get(
                      "exec") or {}).get("command") and
                  workload_of(pod, spec.get(name, {})) == "executor"]
        if not hooked:
            return grace
        for c in hooked:
            self.send(c, signal.SIGPWR)
        deadline = time.monotonic() + grace
        for c in hooked:
            try:
                code = c.proc.wait(max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                continue
            log("kubelet", "%s: %s of %s exited with %d during its preStop hook", self.name,
                c.name, pod["metadata"]["name"], code)
            self.on_exit(pod, code, "Completed" if code == 0 else "Error")
        return max(2.0, deadline - time.monotonic())

    @staticmethod
    def send(container, signum):
        try:
            os.killpg(container.proc.pid, signum)
        except ProcessLookupError:
            pass
        if container.proc.stdin and signum == signal.SIGKILL:
            container.proc.stdin.close()

    def shutdown(self):
        """The emulator stops: every pod killed at once, the kubepods tree removed."""
        with self.lock:
            uids = list(self.pods)
        events = [self.stop_pod(uid, 0) for uid in uids]
        for event in events:
            if event is not None:
                event.wait(15)
        self.tree.remove("kubepods")
