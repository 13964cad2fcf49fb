#!/usr/bin/python3
"""End to end on a node that runs pods for real: gleaner-agent in its production mode.

    test API server (test/apiserver/apiserver.py)
    + gleaner-scheduler run (the shipped Deployment's flags: colocation webhook, agent
      reports over HTTPS checked by TokenReview, batch resources written on the Node)
    + spark-operator / Spark 3.5 / kubelet emulator (test/spark/spark_emulator.py) with one
      real node, n1: kubelet's cgroup v1 layout in a scratch hierarchy, real processes
    + gleaner-agent run with the shipped DaemonSet's flags: pods from the emulated kubelet's
      /pods over HTTPS with the pod's ServiceAccount token, the Node and NodeMetric through
      a kubeconfig, reports over HTTPS with its projected token, enforcement on the real
      cgroups of the scratch hierarchy.

The agent runs as in its pod: in a mount namespace of its own where the ServiceAccount
volume (token and CA) and the report token are mounted where the DaemonSet mounts them,
and /etc/hosts resolves the scheduler's Service name to the scheduler's address (the
cluster DNS and Service of a real cluster).

An LS service (a Burstable pod serving HTTP) and a SparkApplication whose executor the
colocation webhook makes a BE pod (koordinator.sh/qosClass BE, batch resources only,
BestEffort) share the node. The test drives the LS service's load and shows: the agent
lists both pods from kubelet; the executor's cgroup gets the agent's BE settings; the BE
quota falls when LS CPU rises and the executor's CPU use stays under it; the batch CPU the
agent reports reaches the Node through the scheduler, falls under LS load and comes back
after it; the NodeMetric is written; after the agent stops every value it changed is
kubelet's again; after the test no cgroup or process is left.

Root only (real cgroups; exit 77, skipped, otherwise). Usage:
  agent_real_node_e2e_test.py --bin-dir BUILD/bin   (exit 77: binary missing)
GLEANER_E2E_KEEP_LOGS=1 prints every process's log; GLEANER_E2E_VERBOSE=1 the progress."""

import json
import os
import shutil
import socket
import sys
import tempfile
import time
import unittest
import urllib.request

from kubernetes import client

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "spark"))
import scratch_cgroups  # noqa: E402
from colocation_harness import (APISERVER, BATCH_CPU, BATCH_MEMORY, EMULATOR,  # noqa: E402
                                EXAMPLES, MANIFESTS, PYTHON, SCRIPT, SPARK, ColocationHarness)
from e2e_harness import (find_doc, node_report, load_yaml,  # noqa: E402
                         make_certificates, run_with_bin_dir, write_kubeconfig)
from podcgroups import container_config, pod_config  # noqa: E402

BIN_DIR = None
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


class AgentRealNodeE2E(ColocationHarness, unittest.TestCase):
    scheduler_binary = property(lambda self: os.path.join(BIN_DIR, "gleaner-scheduler"))

    def setUp(self):
        reason = scratch_cgroups.skip_reason()
        if reason:
            raise unittest.SkipTest(reason)
        if not shutil.which("unshare"):
            raise unittest.SkipTest("no unshare(1) to give the agent its pod's mounts")
        self.t0 = time.monotonic()
        self.tmp = tempfile.mkdtemp(prefix="gleaner-real-node-")
        self.addCleanup(shutil.rmtree, self.tmp, True)
        self.scratch = scratch_cgroups.ScratchCgroups()
        self.addCleanup(self.scratch.remove)
        self.procs = []
        self.recorder = None
        self.addCleanup(self.stop_all)  # before the scratch goes: its processes first

        api = self.start("apiserver", [PYTHON, APISERVER, "--port", "0",
                                       "--bookmark-interval", "0.5"], stdin=True)
        self.server = "http://127.0.0.1:" + api.wait_line(r"ready port=(\d+)", 15).group(1)
        self.api_client = client.ApiClient(client.Configuration(host=self.server))
        self.custom = client.CustomObjectsApi(self.api_client)
        self.apply_base_manifests()

        # The node as its kubelet registers it: this machine's CPUs and memory.
        cpus = os.cpu_count()
        with open("/proc/meminfo") as f:
            mem_kib = int(next(line for line in f if line.startswith("MemTotal:")).split()[1])
        amounts = {"cpu": str(cpus), "memory": "%dKi" % mem_kib, "pods": "110"}
        self.create({"apiVersion": "v1", "kind": "Node", "metadata": {
            "name": NODE, "labels": {"kubernetes.io/hostname": NODE}}})
        self.call("PATCH", "/api/v1/nodes/%s/status" % NODE, body={"status": {
            "capacity": amounts, "allocatable": amounts,
            "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady"}]}},
            content_type="application/merge-patch+json")

        # The LS service: Burstable, placed on n1 (as kube-scheduler would bind it).
        self.ls_port = free_port()
        self.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": LS_NS}})
        self.create({"apiVersion": "v1", "kind": "Pod", "metadata": {
            "name": LS_POD, "namespace": LS_NS, "labels": {"app": "web"}},
            "spec": {"nodeName": NODE, "priorityClassName": "koord-prod",
                     "terminationGracePeriodSeconds": 2,
                     "containers": [{"name": "web", "image": "nginx:1.27",
                                     "ports": [{"containerPort": 8080,
                                                "hostPort": self.ls_port}],
                                     "resources": {
                                         "requests": {"cpu": "500m", "memory": "256Mi"},
                                         "limits": {"memory": "256Mi"}}}]}})

        self.start_scheduler()
        self.report_token = self.agent_token(NODE)
        self.kubelet_token = self.service_account_token(NODE)

        # The real node's kubelet: HTTPS with a serving certificate for "localhost" (its
        # address as the agent dials it), accepting the agent's ServiceAccount token.
        self.kubelet_ca, tls = make_certificates(self.tmp)
        self.emulator = self.start("emulator", [
            PYTHON, EMULATOR, "--server", self.server, "--nodes", NODE, "--real-nodes", NODE,
            "--cgroup-root", self.scratch.root, "--kubelet-port", "0",
            "--kubelet-tls-cert", os.path.join(tls, "tls.crt"),
            "--kubelet-tls-key", os.path.join(tls, "tls.key"),
            "--kubelet-token", self.kubelet_token, "--exit-on-stdin-eof", "--verbose"],
            stdin=True)
        self.kubelet_port = int(self.emulator.wait_line(
            r"kubelet node=%s port=(\d+)" % NODE, 20).group(1))
        self.emulator.wait_line(r"^ready$", 20)
        self.ls = self.wait_for("the LS pod running", lambda: (
            lambda p: p if p and p["status"].get("phase") == "Running" else None)(
            self.pod(LS_NS, LS_POD)), 20)
        self.wait_for("the LS service answering", self.ls_answers, 20)
        self.log("cluster up")

    # --- the agent ---------------------------------------------------------------------------
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
            POD_MOUNTS, "sh", os.path.join(BIN_DIR, "gleaner-agent"), "run"] + args)
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

    # --- the tests ---------------------------------------------------------------------------
    def test_be_executor_is_held_under_ls_load_and_restored(self):
        found = self.found_values()
        # This agent does not report: the scheduler takes a job off a node whose reported
        # batch room shrinks below what is placed there, and the LS load below (or any
        # other work of the machine) shrinks it. The node's batch room comes from one
        # report, as an agent would post it; test_batch_cpu_follows_ls_load covers reports.
        agent = self.start_agent(report=False)
        agent.wait_line(r"pods from kubelet localhost", 20)
        # The agent lists the LS pod from kubelet's /pods: its name, which the cgroup tree
        # alone would not give it.
        self.wait_for("the agent's series of the LS pod", lambda: (
            LS_NS, LS_POD) in self.agent_pods(), 20)
        memory = int(self.node(NODE)["status"]["capacity"]["memory"][:-2]) * 1024
        status, body = self.sched_request("POST", "/api/v1/reports", json.dumps(node_report(
            NODE, 1, "hand-written", 1000, 4 << 30, cluster="default", capacity=(2000, memory))),
            self.report_token)
        self.assertEqual(status, 200, body)
        self.wait_for("batch room on the Node", lambda: self.batch_cpu() == 1000, 20)

        # A Spark job: its executor is made a BE pod by the colocation webhook and placed
        # on the batch room the agent reports.
        docs = load_yaml(os.path.join(EXAMPLES, "spark-application.yaml"))
        ns_obj, app = find_doc(docs, "Namespace"), find_doc(docs, "SparkApplication")
        ns, name = app["metadata"]["namespace"], app["metadata"]["name"]
        # One executor doing real CPU work (tasks of 0.5 s, back to back) on up to one core
        # (its coreLimit, which the webhook makes its batch-cpu limit and the agent its CFS
        # quota), with requests that fit what a 2-CPU node lends to batch.
        app["spec"]["driver"].update(coreRequest="100m", memory="256m", memoryOverhead="128m")
        app["spec"]["executor"].update(instances=1, cores=1, coreRequest="200m", coreLimit="1",
                                       memory="256m", memoryOverhead="128m")
        app["spec"].setdefault("sparkConf", {}).update({
            "spark.kubernetes.allocation.batch.delay": "100ms",
            "spark.kubernetes.executor.eventProcessingInterval": "100ms"})
        app["metadata"].setdefault("annotations", {})[SCRIPT + "task-seconds"] = "0.5"
        self.create(ns_obj)
        self.probe_webhook(ns)
        self.create(app)
        executor = self.wait_for("the executor running on " + NODE, lambda: (
            lambda ps: ps[0] if len(ps) == 1 and ps[0]["status"].get("phase") == "Running"
            else None)(self.pods(ns, "spark-role=executor")), 60)
        self.assertEqual(executor["spec"]["nodeName"], NODE)
        self.assertEqual(executor["metadata"]["labels"].get("koordinator.sh/qosClass"), "BE")
        self.assertEqual(executor["status"]["qosClass"], "BestEffort")
        main = next(c for c in executor["spec"]["containers"]
                    if c["name"] == "spark-kubernetes-executor")
        batch_request = int(main["resources"]["requests"][BATCH_CPU])
        self.assertEqual(batch_request, 200)
        exec_dir, exec_containers = self.pod_dirs(executor, "kubepods/besteffort")
        exec_main = exec_containers["spark-kubernetes-executor"]
        self.wait_for("the agent's series of the executor, class BE", lambda: self.agent_pods(
        ).get((ns, executor["metadata"]["name"])) == "BE", 20)

        # The agent's BE settings on the executor's real cgroups: cpu.shares from its
        # batch-cpu request (kubelet gave the BestEffort pod 2), memory limit from its
        # batch-memory limit. On its container's cgroup too, which kubelet names in /pods a
        # moment after the pod: within a few passes, not at the next 10 s re-list.
        shares = str(batch_request * 1024 // 1000)
        memory_limit = int(main["resources"]["limits"][BATCH_MEMORY])
        self.wait_for("BE cpu.shares %s and the batch-memory limit on the executor's pod and "
                      "container cgroups" % shares, lambda: all(
                          self.cg(d, "cpu.shares") == shares and int(self.cg(
                              d, "memory.limit_in_bytes", "memory")) == memory_limit
                          for d in (exec_dir, exec_main)), 5)
        start = int(self.cg(exec_dir, "cpuacct.usage", "cpuacct"))
        self.wait_for("0.3 s of CPU used by the executor", lambda: int(self.cg(
            exec_dir, "cpuacct.usage", "cpuacct")) - start >= 300_000_000, 30)

        # The BE tier's limit with LS quiet, then under LS load: the limit must come down
        # (LS takes what BE had) and the executor's CPU use stays under it.
        # (A machine busy with other work leaves BE little to lose: wait for half a core.)
        idle_limit = self.wait_for("a BE quota of half a core or more", lambda: (
            lambda lim: lim if lim is not None and lim >= 0.5 else None)(
            self.be_limit_cores()), 120)
        load = self.start_load()
        limit = self.wait_for("the BE quota down by 0.3 cores, below the executor's core",
                              lambda: (lambda lim: lim if lim is not None and lim <= min(
                                  idle_limit - 0.3, 0.9) else None)(self.be_limit_cores()), 30)
        rate = self.cpu_rate(exec_dir)
        highest = max(limit, self.be_limit_cores() or 0)
        self.log("BE limit %.2f cores with LS quiet, %.2f under LS load; the executor used "
                 "%.2f" % (idle_limit, highest, rate))
        # CFS holds a group to its quota each period; 0.05 cores for the window's edges.
        self.assertLessEqual(rate, highest + 0.05, "the executor runs over the BE quota")
        load.stop()

        driver = self.pod(ns, name + "-driver")
        self.assertEqual(self.pods(ns, "spark-role=executor")[0]["metadata"]["uid"],
                         executor["metadata"]["uid"], "the executor was replaced")
        self.stop_agent_and_check(found, [(executor, "kubepods/besteffort"),
                                          (driver, "kubepods/besteffort")])
        self.custom.delete_namespaced_custom_object(*SPARK[:2], ns, SPARK[2], name)
        self.stop_node_and_check()

    def test_batch_cpu_follows_ls_load(self):
        found = self.found_values()
        # Usage averaged over 5 s: the batch room follows the LS load within seconds.
        agent = self.start_agent(metricAggregateDurationSeconds=5)
        agent.wait_line(r"pods from kubelet localhost", 20)
        # koordlet's NodeMetric, written on the API server.
        metric = self.wait_for("the NodeMetric's status", lambda: (
            self.custom.get_cluster_custom_object("slo.koordinator.sh", "v1alpha1",
                                                  "nodemetrics", NODE).get("status") or {}
        ).get("nodeMetric"), 20)
        self.assertTrue(metric["nodeUsage"]["resources"]["cpu"].endswith("m"), metric)
        # The batch room the agent reports over TLS, written on the Node by the scheduler:
        # with LS quiet, most of the node (what the machine's other work leaves).
        idle = self.wait_for("700m of batch-cpu on the Node", lambda: (
            lambda b: b if b is not None and b >= 700 else None)(self.batch_cpu()), 60)
        load = self.start_load()
        loaded = self.wait_for("the Node's batch-cpu down by 400m under LS load", lambda: (
            lambda b: b if b is not None and b <= idle - 400 else None)(self.batch_cpu()), 40)
        load.stop()
        after = self.wait_for("the Node's batch-cpu back after the load", lambda: (
            lambda b: b if b is not None and b >= loaded + 300 else None)(self.batch_cpu()), 40)
        self.log("batch-cpu %dm with LS quiet, %dm under LS load, %dm after" % (
            idle, loaded, after))
        node = next(n for n in self.sched("/api/v1/nodes")["nodes"] if n["name"] == NODE)
        self.assertEqual(node["health"], "fresh", node)
        self.stop_agent_and_check(found)
        self.stop_node_and_check()


if __name__ == "__main__":
    if scratch_cgroups.skip_reason():
        print("SKIP: " + scratch_cgroups.skip_reason())
        sys.exit(77)
    run_with_bin_dir(globals(), "gleaner-agent", "gleaner-scheduler")
