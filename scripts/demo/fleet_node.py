"""The fleet's real node, m1-n1: pods run for real and gleaner-agent runs in its production mode.

m1's Spark operator emulator is also m1-n1's kubelet (test/spark, --real-nodes): each pod
gets kubelet's cgroup v1 or v2 layout under a scratch hierarchy (test/spark/
scratch_cgroups.py), each container a real process in it, and the kubelet API is served over
HTTPS, accepting the agent pod's ServiceAccount token. An LS service "web" (Burstable, as in
agent_real_node_e2e) runs there. gleaner-agent runs with the shipped DaemonSet's arguments
(test/e2e/agent_pod.py): pods from that kubelet, the Node and NodeMetric through m1's API
server, enforcement on the scratch cgroups, and reports with --cluster m1 over HTTPS to the
fleet's gleaner-scheduler, with its projected token that the scheduler checks by a
TokenReview against m1. Here also: the meters of what the node did (BE CPU used by
executors, the agent's reaction to an LS surge).

m1-n1 is a node of NODE_MEMORY_MIB: its Node lists that memory, and the agent's proc root
(node_proc.py) gives it as MemTotal with the scratch kubepods tree's working set as used, so
memory pressure on m1-n1 is what its pods hold, whatever else this machine runs."""
import os
import socket
import sys
import threading
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "test", "e2e"))
sys.path.insert(0, os.path.join(REPO, "test", "spark"))
import scratch_cgroups  # noqa: E402
from agent_pod import AgentPod, answers, load_argv, service_account_token  # noqa: E402
from e2e_harness import make_certificates  # noqa: E402
from node_proc import NodeProc  # noqa: E402

NODE, MEMBER = "m1-n1", "m1"
LS_NS, LS_POD = "services", "web"
BE_QOS = "kubepods/besteffort"
# The node's memory, and the memory strategies the story sets in its ack-slo-config. Its
# pods hold ~100 MiB (1 %); one executor's work growing by MEMORY_HOG_MIB takes the node past
# MEMORY_EVICT_PERCENT (the shipped 70 % would need 5.6 GiB of this machine's memory). The
# hog stays below the executor pod's memory limit (its batch-memory request, 1408 MiB,
# which the agent writes): the kernel must not OOM-kill it first. Reclaim at 100 %: the
# node holds nothing but its pods, and spark-pi-1 and spark-pi-2 (3712 + 2304 MiB of
# batch-memory) must both fit before the surge, for the surge to be what sends spark-pi-2
# away.
NODE_MEMORY_MIB = 8192
MEMORY_EVICT_PERCENT = 10
MEMORY_RECLAIM_PERCENT = 100
MEMORY_HOG_MIB, MEMORY_HOG_MIB_PER_S = 1024, 400
HOG = os.path.join(HERE, "mem_hog.py")
AGGREGATE_S = 5  # metricAggregateDurationSeconds: the batch room follows load within seconds


class FleetError(RuntimeError):
    pass


class NotShown(FleetError):
    """A story step whose precondition this machine did not give in time (batch room, BE
    CPU: what a busy machine takes), as opposed to Gleaner failing at what it must do. The
    demo reports the step under "Not shown:" with the figures seen and goes on; a test that
    needs the whole story gets it as the FleetError it is."""


def skip_reason():
    """Empty when the real node can run here (root, cgroups, unshare); otherwise why not."""
    reason = scratch_cgroups.skip_reason()
    if not reason and not any(os.access(os.path.join(d, "unshare"), os.X_OK)
                              for d in os.environ.get("PATH", "").split(":")):
        reason = "no unshare(1) to give the agent its pod's mounts"
    return reason


def node_amounts():
    """m1-n1's capacity: this machine's CPUs, NODE_MEMORY_MIB of memory."""
    return {"cpu": str(os.cpu_count()), "memory": "%dMi" % NODE_MEMORY_MIB, "pods": "110"}


def read(path):
    with open(path) as f:
        return f.read().strip()


class RealNode:
    """m1-n1 for the Fleet `fleet` (fleet.py): its scratch cgroups, its kubelet's TLS and
    tokens, the LS pod, the agent, the load. `remember_scratch(scratch)` records the
    hierarchy for the demo's clean-up fallback."""

    def __init__(self, fleet, remember_scratch):
        self.fleet = fleet
        self.dir = os.path.join(fleet.dir, NODE)
        os.makedirs(self.dir, exist_ok=True)
        self.scratch = scratch_cgroups.ScratchCgroups()
        remember_scratch(self.scratch)
        self.v2 = self.scratch.v2
        self.load = None
        self.hog = None
        self.proc = NodeProc(os.path.join(self.dir, "proc"), NODE_MEMORY_MIB,
                             lambda: self.memory_working_set("kubepods"))

    # --- set-up ----------------------------------------------------------------------------
    def pod(self, ls_port):
        """The LS service: Burstable, bound to the node (as kube-scheduler would bind it)."""
        return {"apiVersion": "v1", "kind": "Pod", "metadata": {
            "name": LS_POD, "namespace": LS_NS, "labels": {"app": "web"}},
            "spec": {"nodeName": NODE, "priorityClassName": "koord-prod",
                     "terminationGracePeriodSeconds": 2,
                     "containers": [{"name": "web", "image": "nginx:1.27",
                                     "ports": [{"containerPort": 8080, "hostPort": ls_port}],
                                     "resources": {
                                         "requests": {"cpu": "500m", "memory": "256Mi"},
                                         "limits": {"memory": "256Mi"}}}]}}

    def emulator_args(self):
        """m1's emulator is this node's kubelet: HTTPS with a serving certificate for
        "localhost" (its address as the agent dials it), accepting the agent pod's
        ServiceAccount token (issued by m1 once the token's pod exists)."""
        call = self.fleet.call(MEMBER)
        self.report_token = self.fleet.tokens[NODE]
        self.kubelet_token = service_account_token(call, NODE)
        self.kubelet_ca, tls = make_certificates(self.dir)
        return ["--real-nodes", NODE, "--cgroup-root", self.scratch.root, "--kubelet-port", "0",
                "--kubelet-tls-cert", os.path.join(tls, "tls.crt"),
                "--kubelet-tls-key", os.path.join(tls, "tls.key"),
                "--kubelet-token", self.kubelet_token]

    def start(self, emulator_log_line):
        """After m1's emulator printed its kubelet port: the LS pod running and answering,
        then the agent (usage averaged over 5 s: the batch room follows LS load within
        seconds) listing the LS pod from kubelet."""
        f = self.fleet
        self.kubelet_port = int(emulator_log_line.split("port=")[1].split()[0])
        self.ls_port = free_port()
        f.api(MEMBER, "/api/v1/namespaces", "POST", {"metadata": {"name": LS_NS}})
        status, _ = f.api(MEMBER, "/api/v1/namespaces/%s/pods" % LS_NS, "POST",
                          self.pod(self.ls_port))
        if status not in (200, 201):
            raise FleetError("the LS pod refused: HTTP %d" % status)
        f.wait("the LS pod running on " + NODE, lambda: (f.api(
            MEMBER, "/api/v1/namespaces/%s/pods/%s" % (LS_NS, LS_POD))[1] or {}).get(
                "status", {}).get("phase") == "Running", 30)
        f.wait("the LS service answering", self.ls_answers, 20)
        self.proc.start()
        self.agent = AgentPod(f.bin, self.dir, NODE, f.urls[MEMBER], self.scratch.root,
                              self.kubelet_port, self.kubelet_ca, self.kubelet_token,
                              self.report_token, f.sched_port, f.sched_ca, f.sched_host,
                              free_port(), cluster=MEMBER, proc_root=self.proc.root)
        f.ports += [self.kubelet_port, self.ls_port, self.agent.metrics_port]
        argv, env = self.agent.command(
            threshold={"memoryEvictThresholdPercent": MEMORY_EVICT_PERCENT},
            metricAggregateDurationSeconds=AGGREGATE_S,
            memoryReclaimThresholdPercent=MEMORY_RECLAIM_PERCENT)
        self.agent_started = time.monotonic()
        p = f.spawn("agent-" + NODE, argv, env=env)
        f.wait_log("agent-" + NODE, p, "pods from kubelet localhost", 30)

    def ls_answers(self):
        return answers(self.ls_port)

    def agent_evictions(self):
        """gleaner_evictions_total of the agent, by reason ({} before any; None: no
        answer)."""
        try:
            with urllib.request.urlopen(self.agent.metrics_url, timeout=5) as r:
                text = r.read().decode()
        except OSError:
            return None
        out = {}
        for line in text.splitlines():
            if line.startswith('gleaner_evictions_total{reason="'):
                reason, value = line[len('gleaner_evictions_total{reason="'):].split('"} ')
                out[reason] = int(float(value))
        return out

    # --- the node's cgroups -------------------------------------------------------------------
    def _file(self, controller, rel, name):
        return os.path.join(self.scratch.root, "" if self.v2 else controller, rel, name)

    def cpu_seconds(self, rel):
        """CPU time used by everything in `rel` (None: the cgroup is gone)."""
        try:
            if self.v2:
                usage = dict(line.split() for line in read(self._file(
                    "", rel, "cpu.stat")).splitlines())
                return int(usage["usage_usec"]) / 1e6
            return int(read(self._file("cpuacct", rel, "cpuacct.usage"))) / 1e9
        except (OSError, KeyError, ValueError):
            return None

    def cpu_quota_cores(self, rel):
        """The CFS limit of `rel` in cores, or None when unlimited (summary.ReactionProbe)."""
        try:
            if self.v2:
                quota, period = read(self._file("", rel, "cpu.max")).split()
                return None if quota == "max" else int(quota) / int(period)
            quota = int(read(self._file("cpu", rel, "cpu.cfs_quota_us")))
            return None if quota < 0 else quota / int(read(self._file(
                "cpu", rel, "cpu.cfs_period_us")))
        except (OSError, ValueError):
            return None

    def memory_working_set(self, rel):
        """Bytes used by `rel` less its inactive page cache (kubelet's working set; 0 when
        unreadable)."""
        try:
            stat = dict(line.split() for line in read(self._file(
                "memory", rel, "memory.stat")).splitlines())
            usage = int(read(self._file("memory", rel, "memory.current" if self.v2 else
                                        "memory.usage_in_bytes")))
            return max(0, usage - int(stat["inactive_file" if self.v2 else
                                            "total_inactive_file"]))
        except (OSError, KeyError, ValueError):
            return 0

    def pod_dir(self, pod):
        return "%s/pod%s" % (BE_QOS, pod["metadata"]["uid"])

    # --- memory pressure --------------------------------------------------------------------
    def start_memory_hog(self, pod):
        """The work of the executor `pod` grows: a process in its container cgroup (joined
        before its first allocation, as the container's own processes are) holds and
        touches up to MEMORY_HOG_MIB. It ends with the pod: kubelet kills what is left in a
        pod's cgroup when it removes it (pkg/kubelet/cm/pod_container_manager_linux.go,
        tryKillingCgroupProcesses; here test/spark/podcgroups.py remove_dir)."""
        status = next(s for s in pod["status"]["containerStatuses"]
                      if s["name"] in ("spark-kubernetes-executor", "executor"))
        rel = "%s/%s" % (self.pod_dir(pod), status["containerID"].split("://", 1)[1])
        procs = [os.path.join(self.scratch.root, c, rel, "cgroup.procs") for c in
                 ([""] if self.v2 else scratch_cgroups.CONTROLLERS)]
        script = 'for f in %s; do echo $$ > "$f" || exit 126; done; exec "$@"' % " ".join(
            "'%s'" % p for p in procs)
        self.hog = self.fleet.spawn("memory-hog", [
            "/bin/bash", "-c", script, "bash", "/usr/bin/python3", HOG, "--start-mib", "64",
            "--grow-mib-per-s", str(MEMORY_HOG_MIB_PER_S), "--max-mib", str(MEMORY_HOG_MIB),
            "--tag", self.fleet.dir])
        # Reaped at once when it ends, so that its pod's cgroup can go.
        threading.Thread(target=self.hog.wait, daemon=True).start()
        return self.hog

    # --- LS load ----------------------------------------------------------------------------
    def start_load(self):
        self.load = self.fleet.spawn("load", load_argv("/usr/bin/python3", self.ls_port))
        return self.load

    def stop_load(self):
        if self.load and self.load.poll() is None:
            self.load.stdin.close()  # the load clients end with their stdin
            self.load.terminate()
            self.load.wait(5)
        self.load = None

    def remove(self):
        """After the emulator stopped: the scratch hierarchy (and whatever still runs in it)."""
        self.proc.stop()
        self.scratch.remove()


class ExecutorMeter(threading.Thread):
    """The CPU time executor pods used in their BE cgroups on the real node: cpuacct.usage
    (cpu.stat usage_usec on v2) of each executor pod's cgroup, read every 0.2 s; a pod's last
    reading counts once its cgroup is gone (so at most 0.2 s of each is missed). The
    executor pods are told by `executor_uids()` (the member's API)."""

    POLL_S = 0.2

    def __init__(self, node, executor_uids):
        super().__init__(daemon=True)
        self.node, self.executor_uids = node, executor_uids
        self.last = {}  # uid -> seconds
        self.executors = set()
        self.others = set()
        self.lock = threading.Lock()
        self.stopping = threading.Event()

    def run(self):
        base = self.node._file("cpuacct", BE_QOS, "")
        while not self.stopping.wait(self.POLL_S):
            try:
                uids = [n[3:] for n in os.listdir(base) if n.startswith("pod")]
            except OSError:
                continue
            if any(u not in self.executors and u not in self.others for u in uids):
                known = self.executor_uids()
                with self.lock:
                    self.executors |= {u for u in uids if u in known}
                    self.others |= {u for u in uids if u not in known}
            for uid in uids:
                used = self.node.cpu_seconds("%s/pod%s" % (BE_QOS, uid))
                if used is not None:
                    with self.lock:
                        self.last[uid] = max(self.last.get(uid, 0.0), used)

    def seconds(self):
        with self.lock:
            return sum(v for u, v in self.last.items() if u in self.executors)

    def stop(self):
        self.stopping.set()
        self.join(1)


class LatencyProbe(threading.Thread):
    """The LS service's latency as one more client sees it: a GET every 50 ms, timed, filed
    under the phase of the run it was sent in ("quiet", "surge", ...) with the time it was
    sent (window() takes a phase's first seconds, for phases of unequal length)."""

    INTERVAL_S = 0.05

    def __init__(self, port):
        super().__init__(daemon=True)
        self.url = "http://127.0.0.1:%d/" % port
        self.phase = "quiet"
        self.ms = {}  # phase -> [milliseconds]
        self.sent = {}  # phase -> [time.monotonic() of each request in ms]
        self.failed = 0
        self.stopping = threading.Event()

    def run(self):
        while not self.stopping.wait(self.INTERVAL_S):
            phase, start = self.phase, time.monotonic()
            try:
                with urllib.request.urlopen(self.url, timeout=5) as r:
                    r.read()
            except OSError:
                self.failed += 1
                continue
            self.sent.setdefault(phase, []).append(start)
            self.ms.setdefault(phase, []).append((time.monotonic() - start) * 1000.0)

    def window(self, phase, seconds):
        """The latencies of `phase`'s requests sent within `seconds` of its first."""
        sent = self.sent.get(phase, [])
        return [ms for at, ms in zip(sent, self.ms.get(phase, [])) if at - sent[0] <= seconds]

    def stop(self):
        self.stopping.set()
        self.join(6)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
