"""Pod and container cgroups as kubelet lays them out with the cgroupfs driver, on cgroup v1
or v2, under a root that looks like /sys/fs/cgroup (v1: one directory per controller; v2:
one unified directory) so that a test can hand in a scratch hierarchy instead.

The values are kubelet's: pkg/kubelet/cm/helpers_linux.go (MilliCPUToShares,
MilliCPUToQuota, ResourceConfigForPod) for pod cgroups, the container runtime's share of
pkg/kubelet/kuberuntime/kuberuntime_container_linux.go (calculateLinuxResources) for
container cgroups, pkg/kubelet/cm/qos_container_manager_linux.go for the QoS cgroups and
CpuSharesToCpuWeight of pkg/kubelet/cm/cgroup_manager_linux.go on v2."""

import errno
import os
import select
import signal
import time

import kubeapi

MIN_SHARES, MAX_SHARES, SHARES_PER_CPU = 2, 262144, 1024
QUOTA_PERIOD, MIN_QUOTA_PERIOD = 100000, 1000  # microseconds
V1_CONTROLLERS = ("cpu", "cpuacct", "cpuset", "memory", "pids")


def milli_cpu_to_shares(milli):
    if milli == 0:
        return MIN_SHARES  # the kernel's minimum, not its 1024 default for "unset"
    return max(MIN_SHARES, min(MAX_SHARES, milli * SHARES_PER_CPU // 1000))


def milli_cpu_to_quota(milli, period=QUOTA_PERIOD):
    """0 means no quota."""
    if milli == 0:
        return 0
    return max(MIN_QUOTA_PERIOD, milli * period // 1000)


def shares_to_weight(shares):
    """cgroup v2 cpu.weight for v1 cpu.shares: [2, 262144] mapped onto [1, 10000]."""
    return 1 + ((shares - 2) * 9999) // 262142


def qos_class(pod):
    """The API server's status.qosClass when it set one (kubelet reads it first), else
    GetPodQOS: no cpu/memory requests or limits is BestEffort; every container limiting
    cpu and memory at its requests is Guaranteed; anything else Burstable."""
    given = (pod.get("status") or {}).get("qosClass")
    if given:
        return given
    spec = pod.get("spec") or {}
    seen, guaranteed = set(), True
    for c in (spec.get("containers") or []) + (spec.get("initContainers") or []):
        res = c.get("resources") or {}
        req, lim = res.get("requests") or {}, res.get("limits") or {}
        for name in ("cpu", "memory"):
            seen |= {name} & (set(req) | set(lim))
            if name not in lim or (name in req and kubeapi.quantity_value(name, req[name]) !=
                                   kubeapi.quantity_value(name, lim[name])):
                guaranteed = False
    if not seen:
        return "BestEffort"
    return "Guaranteed" if guaranteed else "Burstable"


def container_values(container):
    """(cpu request milli, cpu limit milli, memory limit bytes) of one container; a request
    left out where a limit is given is the limit (API defaulting)."""
    res = container.get("resources") or {}
    lim = res.get("limits") or {}
    req = dict(lim)
    req.update(res.get("requests") or {})
    value = lambda d, k: kubeapi.quantity_value(k, d[k]) if k in d else 0  # noqa: E731
    return value(req, "cpu"), value(lim, "cpu"), value(lim, "memory")


def container_config(container):
    """calculateLinuxResources: shares from the request, quota from the limit, memory
    limit from the limit (0: none)."""
    cpu_req, cpu_lim, mem_lim = container_values(container)
    return {"shares": milli_cpu_to_shares(cpu_req), "quota": milli_cpu_to_quota(cpu_lim),
            "memory": mem_lim}


def pod_config(pod):
    """ResourceConfigForPod: quota and memory limit only where every container declares
    them (always for Guaranteed); BestEffort gets the minimum shares and nothing else."""
    qos = qos_class(pod)
    if qos == "BestEffort":
        return {"shares": MIN_SHARES, "quota": 0, "memory": 0}
    requests = kubeapi.pod_requests(pod)
    containers = (pod.get("spec") or {}).get("containers") or []
    values = [container_values(c) for c in containers]
    cpu_limits = all(v[1] > 0 for v in values)
    mem_limits = all(v[2] > 0 for v in values)
    return {"shares": milli_cpu_to_shares(requests.get("cpu", 0)),
            "quota": milli_cpu_to_quota(sum(v[1] for v in values)) if cpu_limits else 0,
            "memory": sum(v[2] for v in values) if mem_limits else 0}


class CgroupTree:
    """kubepods/{burstable,besteffort}/pod<uid>/<container id> under `root`."""

    def __init__(self, root):
        self.root = root
        self.v2 = os.path.exists(os.path.join(root, "cgroup.controllers"))
        self.controllers = [""] if self.v2 else [
            c for c in V1_CONTROLLERS if os.path.isdir(os.path.join(root, c))]
        if not self.controllers:
            raise ValueError("%s is no cgroup root: neither cgroup.controllers nor a v1 "
                             "controller directory (%s) in it" % (root, ", ".join(V1_CONTROLLERS)))

    @staticmethod
    def qos_dir(qos):
        return "kubepods" if qos == "Guaranteed" else "kubepods/" + qos.lower()

    def pod_dir(self, qos, uid):
        return "%s/pod%s" % (self.qos_dir(qos), uid)

    def path(self, relative, controller=None):
        controller = controller if controller is not None else ("" if self.v2 else "cpu")
        return os.path.join(self.root, controller, relative)

    def write(self, relative, name, value, controller=None):
        with open(os.path.join(self.path(relative, controller), name), "w") as f:
            f.write(str(value))

    def make(self, relative):
        for c in self.controllers:
            path = self.path(relative, c)
            if os.path.isdir(path):
                continue
            os.mkdir(path)
            if c == "cpuset":  # a v1 cpuset admits no task until it has cpus and mems
                parent = os.path.dirname(path)
                for name in ("cpuset.cpus", "cpuset.mems"):
                    with open(os.path.join(parent, name)) as f:
                        self.write(relative, name, f.read().strip() or "\n", c)
            elif self.v2:
                with open(os.path.join(os.path.dirname(path), "cgroup.subtree_control"), "w") as f:
                    f.write("+cpu +memory")

    def apply(self, relative, config):
        if self.v2:
            self.write(relative, "cpu.weight", shares_to_weight(config["shares"]))
            self.write(relative, "cpu.max", "%s %d" % (config["quota"] or "max", QUOTA_PERIOD))
            if config["memory"]:
                self.write(relative, "memory.max", config["memory"])
            return
        self.write(relative, "cpu.shares", config["shares"])
        self.write(relative, "cpu.cfs_period_us", QUOTA_PERIOD)
        self.write(relative, "cpu.cfs_quota_us", config["quota"] or -1)
        if config["memory"] and "memory" in self.controllers:
            self.write(relative, "memory.limit_in_bytes", config["memory"], "memory")

    def enter(self, relative, pid):
        for c in self.controllers:
            self.write(relative, "cgroup.procs", pid, c)

    def procs(self, relative, controller=None):
        try:
            with open(os.path.join(self.path(relative, controller), "cgroup.procs")) as f:
                return [int(x) for x in f.read().split()]
        except FileNotFoundError:
            return []

    def remove(self, relative):
        for c in self.controllers:
            remove_dir(self.path(relative, c))


def remove_dir(top, timeout=5.0):
    """rmdir bottom-up; processes still inside are killed first (the kernel refuses to
    remove a cgroup with tasks)."""
    if not os.path.isdir(top):
        return
    for d in sorted((d for d, _, _ in os.walk(top)), key=len, reverse=True):
        if rmdir_gone(d):
            continue
        kill_all(os.path.join(d, "cgroup.procs"), time.monotonic() + timeout)
        remove_with_retries(d, timeout)


def rmdir_gone(d):
    """True once `d` is removed (or was gone); false while the kernel holds it busy."""
    try:
        os.rmdir(d)
        return True
    except OSError as e:
        if e.errno == errno.ENOENT:
            return True
        if e.errno != errno.EBUSY:
            raise
        return False


def remove_with_retries(d, timeout):
    """A task that has exited still holds its cgroup until its parent reaps it. The
    runtime's schedule for that: runc's RemovePaths (libcontainer/cgroups/utils.go) tries
    five times, 10 ms apart and doubling; what it leaves kubelet's housekeeping removes on a
    later pass (pod_container_manager's cleanup of orphaned pod cgroups, every 2 s), modelled
    here by going on at that period until `timeout`."""
    deadline = time.monotonic() + timeout
    delay = 0.01
    while not rmdir_gone(d):
        if time.monotonic() > deadline:
            raise OSError(errno.EBUSY, "cgroup still busy after %.0f s" % timeout, d)
        time.sleep(delay)  # the runtime's retry schedule, not a wait for this test
        delay = min(delay * 2, 2.0)


def kill_all(procs_file, deadline):
    """SIGKILL every task of the cgroup and wait (on a pidfd, bounded by `deadline`) until
    each has exited."""
    try:
        with open(procs_file) as f:
            pids = [int(x) for x in f.read().split()]
    except FileNotFoundError:
        return
    for pid in pids:
        try:
            fd = os.pidfd_open(pid)
        except ProcessLookupError:
            continue
        try:
            signal.pidfd_send_signal(fd, signal.SIGKILL)
            select.select([fd], [], [], max(0.0, deadline - time.monotonic()))
        except ProcessLookupError:
            pass
        finally:
            os.close(fd)
