"""The node side of the real-node end-to-end test (agent_real_node_e2e_test.py): gleaner-agent
started as its DaemonSet runs it (its pod's mounts in a mount namespace of its own), the
node's cgroups read back, LS load driven, and the checks that the agent restored kubelet's
values and that the emulator left nothing behind. RealNodeHarness is a ColocationHarness
mixin; the test case sets self.scratch, self.emulator, self.ls (the LS pod), self.ls_port,
self.kubelet_port, self.kubelet_ca, self.report_token and self.kubelet_token."""

import os
import socket
import time
import urllib.request

from agent_pod import AgentPod, answers, load_argv, service_account_token
from colocation_harness import BATCH_CPU, PYTHON, ColocationHarness
from podcgroups import container_config, pod_config

NODE = "n1"
LS_NS, LS_POD = "services", "web"
# The knobs kubelet or the agent write in a pod or QoS cgroup (cgroup v1).
KNOBS = {"cpu": ("cpu.shares", "cpu.cfs_quota_us", "cpu.cfs_period_us", "cpu.cfs_burst_us",
                 "cpu.idle"),
         "cpuset": ("cpuset.cpus", "cpuset.mems"),
         "memory": ("memory.limit_in_bytes", "memory.soft_limit_in_bytes")}


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def read(path):
    with open(path) as f:
        return f.read().strip()


class RealNodeHarness(ColocationHarness):
    bin_dir = None  # where gleaner-agent is; set by the test case

    def service_account_token(self, node):
        """The agent pod's ServiceAccount token (agent_pod.service_account_token)."""
        return service_account_token(lambda m, path, body: self.call(m, path, body=body), node)

    def start_agent(self, report=True, **colocation):
        """gleaner-agent run as the shipped DaemonSet runs it (agent_pod.AgentPod)."""
        pod = AgentPod(self.bin_dir, self.tmp, NODE, self.server, self.scratch.root,
                       self.kubelet_port, self.kubelet_ca, self.kubelet_token,
                       self.report_token, self.sched_port, self.sched_ca, self.sched_host,
                       free_port())
        self.metrics_url = pod.metrics_url
        argv, env = pod.command(report, **colocation)
        os.environ.update(env)
        self.agent = self.start("agent", argv)
        return self.agent

    def agent_metrics(self):
        with urllib.request.urlopen(self.metrics_url, timeout=5) as resp:
            return resp.read().decode()

    def agent_pods(self):
        """{(namespace, pod): qos} of every pod the agent has a CPU series for."""
        pods = {}
        try:
            text = self.agent_metrics()
        except OSError:
            return pods
        for line in text.splitlines():
            if line.startswith("gleaner_pod_cpu_usage_cores{"):
                labels = dict(kv.split("=", 1) for kv in line[line.index("{") + 1:
                                                              line.index("}")].split(","))
                pods[(labels["namespace"].strip('"'), labels["pod"].strip('"'))] = labels[
                    "qos"].strip('"')
        return pods

    # --- the node ----------------------------------------------------------------------------
    def cg(self, relative, name, controller="cpu"):
        return read(os.path.join(self.scratch.root, controller, relative, name))

    def knobs(self, relative):
        """Every knob of KNOBS the kernel offers in `relative`."""
        values = {}
        for controller, names in KNOBS.items():
            for name in names:
                path = os.path.join(self.scratch.root, controller, relative, name)
                if os.path.exists(path):
                    values[(controller, name)] = read(path)
        return values

    def pod_dirs(self, pod, qos_dir):
        """The pod's cgroup and its containers' (kubelet's cgroupfs names)."""
        pod_dir = "%s/pod%s" % (qos_dir, pod["metadata"]["uid"])
        return pod_dir, {c["name"]: pod_dir + "/" + c["containerID"].split("://", 1)[1]
                         for c in pod["status"]["containerStatuses"]}

    def cpu_rate(self, relative, seconds=2.0):
        """Cores the cgroup used over `seconds` (cpuacct.usage, nanoseconds)."""
        start, t0 = int(self.cg(relative, "cpuacct.usage", "cpuacct")), time.monotonic()
        time.sleep(seconds)  # the measuring window, not a synchronisation
        used = int(self.cg(relative, "cpuacct.usage", "cpuacct")) - start
        return used / 1e9 / (time.monotonic() - t0)

    def be_limit_cores(self):
        """The BE tier's CFS limit in cores (None: no quota)."""
        quota = int(self.cg("kubepods/besteffort", "cpu.cfs_quota_us"))
        period = int(self.cg("kubepods/besteffort", "cpu.cfs_period_us"))
        return None if quota < 0 else quota / period

    def ls_answers(self):
        return answers(self.ls_port)

    def batch_cpu(self):
        value = self.node(NODE)["status"]["allocatable"].get(BATCH_CPU)
        return None if value is None else int(value)  # millicores, as Koordinator writes it

    def found_values(self):
        """The knobs of the QoS cgroups and the LS pod's before the agent starts: kubelet's."""
        ls_pod_dir, ls_containers = self.pod_dirs(self.ls, "kubepods/burstable")
        found = {d: self.knobs(d) for d in ("kubepods", "kubepods/burstable",
                                            "kubepods/besteffort", ls_pod_dir)}
        found.update({d: self.knobs(d) for d in ls_containers.values()})
        self.assertEqual(found["kubepods/besteffort"][("cpu", "cpu.cfs_quota_us")], "-1")
        return found

    def start_load(self):
        """Clients keeping the LS service busy, until the LS pod uses 0.6 cores."""
        load = self.start("load", load_argv(PYTHON, self.ls_port), stdin=True)
        ls_pod_dir, _ = self.pod_dirs(self.ls, "kubepods/burstable")
        self.wait_for("the LS pod using 0.6 cores", lambda: self.cpu_rate(ls_pod_dir, 1) > 0.6,
                      30)
        return load

    def stop_agent_and_check(self, found, pods=()):
        """SIGTERM, as kubelet stops the agent's pod (no DaemonSet replaces it): every value
        it changed is kubelet's again: the values `found` before it started, and for
        `pods` (pod, its QoS directory) the values kubelet gives their cgroups."""
        fresh = found[next(d for d in found if d.count("/") == 3)]  # the LS container
        expected = dict(found)
        for pod, qos_dir in pods:
            pod_dir, containers = self.pod_dirs(pod, qos_dir)
            specs = {c["name"]: c for c in pod["spec"]["containers"]}
            for d, config in [(pod_dir, pod_config(pod))] + [
                    (d, container_config(specs[c])) for c, d in containers.items()]:
                # A new cgroup's values, except those kubelet sets from the pod's spec.
                want = dict(fresh)
                want[("cpu", "cpu.shares")] = str(config["shares"])
                want[("cpu", "cpu.cfs_quota_us")] = str(config["quota"] or -1)
                want[("memory", "memory.limit_in_bytes")] = str(config["memory"]) if config[
                    "memory"] else found[qos_dir][("memory", "memory.limit_in_bytes")]
                expected[d] = want
        self.agent.stop()
        self.assertEqual(self.agent.proc.returncode, 0, self.agent.text()[-3000:])
        for d, values in expected.items():
            self.assertEqual(self.knobs(d), values, d)

    def stop_node_and_check(self):
        """The emulator stops: no process of a pod and no cgroup remain."""
        pids = [int(p) for d, _, _ in os.walk(os.path.join(self.scratch.root, "cpu", "kubepods"))
                for p in read(os.path.join(d, "cgroup.procs")).split()]
        self.assertTrue(pids)
        # Within the emulator's own bounds: its pods killed together (each SIGKILLed
        # process waited for up to 10 s), then their cgroups (each directory retried for
        # up to 5 s, podcgroups.remove_with_retries). Beyond that it is hung, and its log
        # gets its threads' stacks.
        self.emulator.stop(grace_s=20)
        self.assertEqual(self.emulator.proc.returncode, 0, self.emulator.text()[-3000:])
        self.assertEqual([p for p in pids if os.path.exists("/proc/%d" % p)], [])
        for controller in ("cpu", "cpuacct", "cpuset", "memory"):
            self.assertFalse(os.path.exists(os.path.join(self.scratch.root, controller,
                                                         "kubepods")), controller)
        self.scratch.remove()
        self.assertFalse(self.scratch.exists())
