"""The node side of the real-node end-to-end test (agent_real_node_e2e_test.py): gleaner-agent
started as its DaemonSet runs it (its pod's mounts in a mount namespace of its own), the
node's cgroups read back, LS load driven, and the checks that the agent restored kubelet's
values and that the emulator left nothing behind. RealNodeHarness is a ColocationHarness
mixin; the test case sets self.scratch, self.emulator, self.ls (the LS pod), self.ls_port,
self.kubelet_port, self.kubelet_ca, self.report_token and self.kubelet_token."""

import json
import os
import socket
import time
import urllib.request

from colocation_harness import BATCH_CPU, MANIFESTS, PYTHON, ColocationHarness
from e2e_harness import find_doc, load_yaml, write_kubeconfig
from podcgroups import container_config, pod_config

NODE = "n1"
LS_NS, LS_POD = "services", "web"
# The knobs kubelet or the agent write in a pod or QoS cgroup (cgroup v1).
KNOBS = {"cpu": ("cpu.shares", "cpu.cfs_quota_us", "cpu.cfs_period_us", "cpu.cfs_burst_us",
                 "cpu.idle"),
         "cpuset": ("cpuset.cpus", "cpuset.mems"),
         "memory": ("memory.limit_in_bytes", "memory.soft_limit_in_bytes")}
# A client hammering the LS service: each request spins its CPU for 1 ms (workload.py).
LOAD = """
import sys, threading, urllib.request
url = "http://127.0.0.1:%s/" % sys.argv[1]
def hammer():
    while True:
        try:
            urllib.request.urlopen(url, timeout=10).read()
        except OSError:
            pass
for _ in range(int(sys.argv[2])):
    threading.Thread(target=hammer, daemon=True).start()
sys.stdin.read()
"""
# The agent's pod: what kubelet mounts (the ServiceAccount volume, the projected report
# token) where the DaemonSet expects it, and the Service name resolving to the scheduler.
POD_MOUNTS = """set -e
mount -t tmpfs -o size=1m,mode=0755 gleaner-agent-run /run
mkdir -p /run/secrets/kubernetes.io/serviceaccount /run/secrets/gleaner
mount --bind "$GLEANER_SA_DIR" /run/secrets/kubernetes.io/serviceaccount
mount --bind "$GLEANER_REPORT_TOKEN_DIR" /run/secrets/gleaner
mount --bind "$GLEANER_HOSTS" /etc/hosts
exec "$@"
"""


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
        """The token kubelet mounts in the agent pod's ServiceAccount volume (audience: the
        API server), bound to the pod agent_token made; it is what the agent shows kubelet."""
        ns, name = "kube-system", "gleaner-agent-" + node
        pod = self.get_raw("/api/v1/namespaces/%s/pods/%s" % (ns, name))
        issued = self.call("POST", "/api/v1/namespaces/%s/serviceaccounts/%s/token" % (
            ns, pod["spec"]["serviceAccountName"]), body={"spec": {
                "expirationSeconds": 3600, "boundObjectRef": {
                    "kind": "Pod", "apiVersion": "v1", "name": name,
                    "uid": pod["metadata"]["uid"]}}})
        return issued["status"]["token"]

    def slo_config_dir(self, colocation):
        """The shipped ack-slo-config as kubelet mounts it (one file per key), changed where
        a test of seconds on a shared 2-CPU machine needs it:
        - the test's `colocation` fields; NodeMetric every 2 s (shipped: 60);
        - koordlet's threshold formula for BE CPU (cpuSuppressMode always; the shipped slo
          mode steers by run-queue waits, for which a busy test box gives no fixed figure);
        - reclaim and suppress thresholds at 100 %: this node is the whole machine, whose
          other work (the test's own processes, other jobs of a CI box) counts as system
          usage; at the shipped 60 / 65 % one busy core beside the test would leave no batch
          room and no BE CPU for the LS load to take away."""
        d = os.path.join(self.tmp, "slo-config")
        os.makedirs(d)
        data = find_doc(load_yaml(os.path.join(MANIFESTS, "ack-slo-config.yaml")),
                        "ConfigMap")["data"]
        shipped = json.loads(data["colocation-config"])
        shipped.update(colocation, metricReportIntervalSeconds=2, cpuReclaimThresholdPercent=100)
        data["colocation-config"] = json.dumps(shipped)
        threshold = json.loads(data["resource-threshold-config"])
        threshold["clusterStrategy"].update(cpuSuppressMode="always",
                                            cpuSuppressThresholdPercent=100)
        data["resource-threshold-config"] = json.dumps(threshold)
        for key, value in data.items():
            with open(os.path.join(d, key), "w") as f:
                f.write(value)
        return d

    def start_agent(self, report=True, **colocation):
        """gleaner-agent run with the shipped DaemonSet's arguments, except where they name
        the node's own files and ports: the cgroup root (the scratch hierarchy), /proc,
        the config and state directories, the kubeconfig, the kubelet's and the
        scheduler's ports, the scheduler's CA file."""
        ds = find_doc(load_yaml(os.path.join(MANIFESTS, "agent-daemonset.yaml")), "DaemonSet")
        container = ds["spec"]["template"]["spec"]["containers"][0]
        sa_dir = os.path.join(self.tmp, "serviceaccount")
        report_dir = os.path.join(self.tmp, "report-token")
        for d, files in ((sa_dir, {"token": self.kubelet_token, "ca.crt": read(
                self.kubelet_ca) + "\n"}), (report_dir, {"token": self.report_token})):
            os.makedirs(d)
            for name, text in files.items():
                with open(os.path.join(d, name), "w") as f:
                    f.write(text)
        hosts = os.path.join(self.tmp, "hosts")
        with open("/etc/hosts") as f, open(hosts, "w") as out:
            out.write(f.read() + "\n127.0.0.1 %s\n" % self.sched_host)
        url = container["args"][[a.split("=")[0] for a in container["args"]].index(
            "--scheduler-url")].split("=", 1)[1]
        local = {
            "--cgroup-root": self.scratch.root, "--proc-root": "/proc",
            "--resctrl-root": os.path.join(self.tmp, "no-resctrl"),
            "--config-dir": self.slo_config_dir(colocation),
            "--kubeconfig": write_kubeconfig(os.path.join(self.tmp, "agent-kubeconfig"),
                                             self.server),
            "--kubelet-host": "localhost", "--kubelet-port": str(self.kubelet_port),
            "--metrics-addr": "127.0.0.1:%d" % free_port(),
            "--scheduler-url": url.replace(":8080/", ":%d/" % self.sched_port),
            "--scheduler-ca-file": self.sched_ca,
            "--token-file": "/var/run/secrets/gleaner/token",
        }
        if not report:
            for flag in ("--scheduler-url", "--scheduler-ca-file", "--token-file"):
                local[flag] = None
        self.metrics_url = "http://%s/metrics" % local["--metrics-addr"]
        args = []
        for arg in container["args"]:
            flag = arg.split("=", 1)[0]
            if flag not in local:
                args.append(arg)
            elif local[flag] is not None:
                args.append("%s=%s" % (flag, local.pop(flag)))
        args += ["%s=%s" % kv for kv in local.items() if kv[1] is not None]
        args += ["--node-name=" + NODE, "--state-dir=" + os.path.join(self.tmp, "state"),
                 "--pod-name=gleaner-agent-" + NODE, "--pod-namespace=kube-system"]
        os.environ.update(GLEANER_SA_DIR=sa_dir, GLEANER_REPORT_TOKEN_DIR=report_dir,
                          GLEANER_HOSTS=hosts)
        self.agent = self.start("agent", [
            "unshare", "--mount", "--propagation", "private", "--", "/bin/sh", "-c",
            POD_MOUNTS, "sh", os.path.join(self.bin_dir, "gleaner-agent"), "run"] + args)
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
        try:
            with urllib.request.urlopen("http://127.0.0.1:%d/" % self.ls_port, timeout=5) as r:
                return r.status == 200
        except OSError:
            return False

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
        load = self.start("load", [PYTHON, "-c", LOAD, str(self.ls_port), "6"], stdin=True)
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
        self.emulator.stop()
        self.assertEqual(self.emulator.proc.returncode, 0, self.emulator.text()[-3000:])
        self.assertEqual([p for p in pids if os.path.exists("/proc/%d" % p)], [])
        for controller in ("cpu", "cpuacct", "cpuset", "memory"):
            self.assertFalse(os.path.exists(os.path.join(self.scratch.root, controller,
                                                         "kubepods")), controller)
        self.scratch.remove()
        self.assertFalse(self.scratch.exists())
