"""gleaner-agent as its DaemonSet runs it on a real node, for the end-to-end tests and the
demo's fleet (scripts/demo/fleet_node.py): the tokens kubelet gives its pod, the
ack-slo-config it mounts, its argv built from the shipped DaemonSet, its pod's mounts (a
mount namespace of its own), and the client load that drives an LS service. No unittest
here: each caller brings its own API call and process starter."""

import json
import os
import urllib.request

from e2e_harness import find_doc, load_yaml, write_kubeconfig

HERE = os.path.dirname(os.path.abspath(__file__))
MANIFESTS = os.path.join(os.path.dirname(os.path.dirname(HERE)), "deploy", "manifests")

# A client hammering an LS service: each request spins its CPU for 1 ms (workload.py).
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


def daemonset():
    return find_doc(load_yaml(os.path.join(MANIFESTS, "agent-daemonset.yaml")), "DaemonSet")


def load_argv(python, port, clients=6):
    """The load client's argv (it runs until its stdin closes)."""
    return [python, "-c", LOAD, str(port), str(clients)]


def answers(port):
    """Whether the LS service on this local port answers 200."""
    try:
        with urllib.request.urlopen("http://127.0.0.1:%d/" % port, timeout=5) as r:
            return r.status == 200
    except OSError:
        return False


def agent_token(call, node):
    """The projected token kubelet gives the agent pod of `node`: a TokenRequest for the
    DaemonSet's ServiceAccount and audience, bound to a pod on that node. `call(method,
    path, body)` is the cluster's API (returns the decoded object)."""
    ds = daemonset()
    ns = ds["metadata"]["namespace"]
    spec = ds["spec"]["template"]["spec"]
    sa = spec["serviceAccountName"]
    audience = next(src["serviceAccountToken"]["audience"] for v in spec["volumes"]
                    if "projected" in v for src in v["projected"]["sources"]
                    if "serviceAccountToken" in src)
    if not call("GET", "/api/v1/namespaces/%s/serviceaccounts" % ns, None)["items"]:
        call("POST", "/api/v1/namespaces/%s/serviceaccounts" % ns, {"metadata": {"name": sa}})
    pod = call("POST", "/api/v1/namespaces/%s/pods" % ns, {
        "metadata": {"name": "gleaner-agent-" + node,
                     "labels": ds["spec"]["template"]["metadata"]["labels"]},
        "spec": {"serviceAccountName": sa, "nodeName": node,
                 "containers": [{"name": "agent", "image": "gleaner", "resources": {}}]}})
    issued = call("POST", "/api/v1/namespaces/%s/serviceaccounts/%s/token" % (ns, sa), {
        "spec": {"audiences": [audience], "expirationSeconds": 3600,
                 "boundObjectRef": {"kind": "Pod", "apiVersion": "v1",
                                    "name": pod["metadata"]["name"],
                                    "uid": pod["metadata"]["uid"]}}})
    return issued["status"]["token"]


def service_account_token(call, node):
    """The token kubelet mounts in the agent pod's ServiceAccount volume (audience: the API
    server), bound to the pod agent_token made; it is what the agent shows kubelet."""
    ns, name = "kube-system", "gleaner-agent-" + node
    pod = call("GET", "/api/v1/namespaces/%s/pods/%s" % (ns, name), None)
    issued = call("POST", "/api/v1/namespaces/%s/serviceaccounts/%s/token" % (
        ns, pod["spec"]["serviceAccountName"]), {"spec": {
            "expirationSeconds": 3600, "boundObjectRef": {
                "kind": "Pod", "apiVersion": "v1", "name": name,
                "uid": pod["metadata"]["uid"]}}})
    return issued["status"]["token"]


def slo_config_dir(tmp, colocation, threshold=None):
    """The shipped ack-slo-config as kubelet mounts it (one file per key), changed where a
    run of seconds on a shared 2-CPU machine needs it:
    - the caller's `colocation` fields and resource-threshold-config clusterStrategy
      `threshold` fields; NodeMetric every 2 s (shipped: 60);
    - koordlet's threshold formula for BE CPU (cpuSuppressMode always; the shipped slo mode
      steers by run-queue waits, for which a busy box gives no fixed figure);
    - reclaim and suppress thresholds at 100 %: this node is the whole machine, whose other
      work (the test's own processes, other jobs of a CI box) counts as system usage; at the
      shipped 60 / 65 % one busy core beside the run would leave no batch room and no BE CPU
      for the LS load to take away."""
    d = os.path.join(tmp, "slo-config")
    os.makedirs(d)
    data = find_doc(load_yaml(os.path.join(MANIFESTS, "slo-config", "ack-slo-config.yaml")),
                    "ConfigMap")["data"]
    shipped = json.loads(data["colocation-config"])
    shipped.update(colocation, metricReportIntervalSeconds=2, cpuReclaimThresholdPercent=100)
    data["colocation-config"] = json.dumps(shipped)
    strategies = json.loads(data["resource-threshold-config"])
    strategies["clusterStrategy"].update(threshold or {}, cpuSuppressMode="always",
                                         cpuSuppressThresholdPercent=100)
    data["resource-threshold-config"] = json.dumps(strategies)
    for key, value in data.items():
        with open(os.path.join(d, key), "w") as f:
            f.write(value)
    return d


def set_threshold_fields(config_dir, **fields):
    """Changes resource-threshold-config's clusterStrategy `fields` in the ack-slo-config
    directory `config_dir` (slo_config_dir's) in one step, as an edit of the ConfigMap
    reaches the pod: the key's file is replaced whole (kubelet swaps its ..data link), and
    the agent reads a changed file at its next tick."""
    path = os.path.join(config_dir, "resource-threshold-config")
    with open(path) as f:
        strategies = json.load(f)
    strategies["clusterStrategy"].update(fields)
    with open(path + ".new", "w") as f:
        json.dump(strategies, f)
    os.rename(path + ".new", path)


def write_files(d, files):
    os.makedirs(d)
    for name, text in files.items():
        with open(os.path.join(d, name), "w") as f:
            f.write(text)
    return d


class AgentPod:
    """One node's agent: `node`, its API server `server` (http://), the scratch cgroup root,
    the kubelet's port and CA file, the tokens (kubelet_token for kubelet, report_token for
    the scheduler), the scheduler's port, CA file and Service host name; `tmp` for its
    files; `proc_root` when the node's /proc is not the machine's (scripts/demo/
    node_proc.py). command() gives the argv and the environment the pod's mounts read."""

    def __init__(self, bin_dir, tmp, node, server, cgroup_root, kubelet_port, kubelet_ca,
                 kubelet_token, report_token, sched_port, sched_ca, sched_host,
                 metrics_port, cluster=None, proc_root="/proc"):
        self.__dict__.update(locals())
        del self.__dict__["self"]
        self.metrics_url = "http://127.0.0.1:%d/metrics" % metrics_port

    def set_threshold(self, **fields):
        """Edits the running agent's resource-threshold-config clusterStrategy (`fields`)."""
        set_threshold_fields(os.path.join(self.tmp, "slo-config"), **fields)

    def command(self, report=True, threshold=None, **colocation):
        """gleaner-agent run with the shipped DaemonSet's arguments, except where they name
        the node's own files and ports: the cgroup root (the scratch hierarchy), /proc, the
        config and state directories, the kubeconfig, the kubelet's and the scheduler's
        ports, the scheduler's CA file; --cluster when given. The kubeconfig carries the
        pod's ServiceAccount token, which --kubeconfig=in-cluster would present (the API
        server's request log then tells the agent's calls apart). Returns (argv, env)."""
        container = daemonset()["spec"]["template"]["spec"]["containers"][0]
        with open(self.kubelet_ca) as f:
            ca = f.read().strip() + "\n"
        sa_dir = write_files(os.path.join(self.tmp, "serviceaccount"),
                             {"token": self.kubelet_token, "ca.crt": ca})
        report_dir = write_files(os.path.join(self.tmp, "report-token"),
                                 {"token": self.report_token})
        hosts = os.path.join(self.tmp, "hosts")
        with open("/etc/hosts") as f, open(hosts, "w") as out:
            out.write(f.read() + "\n127.0.0.1 %s\n" % self.sched_host)
        url = container["args"][[a.split("=")[0] for a in container["args"]].index(
            "--scheduler-url")].split("=", 1)[1]
        local = {
            "--cgroup-root": self.cgroup_root, "--proc-root": self.proc_root,
            "--resctrl-root": os.path.join(self.tmp, "no-resctrl"),
            "--config-dir": slo_config_dir(self.tmp, colocation, threshold),
            "--kubeconfig": write_kubeconfig(os.path.join(self.tmp, "agent-kubeconfig"),
                                             self.server, self.kubelet_token),
            "--kubelet-host": "localhost", "--kubelet-port": str(self.kubelet_port),
            "--metrics-addr": "127.0.0.1:%d" % self.metrics_port,
            "--scheduler-url": url.replace(":8080/", ":%d/" % self.sched_port),
            "--scheduler-ca-file": self.sched_ca,
            "--token-file": "/var/run/secrets/gleaner/token",
        }
        if not report:
            for flag in ("--scheduler-url", "--scheduler-ca-file", "--token-file"):
                local[flag] = None
        args = []
        for arg in container["args"]:
            flag = arg.split("=", 1)[0]
            if flag not in local:
                args.append(arg)
            elif local[flag] is not None:
                args.append("%s=%s" % (flag, local.pop(flag)))
        args += ["%s=%s" % kv for kv in local.items() if kv[1] is not None]
        args += ["--node-name=" + self.node, "--state-dir=" + os.path.join(self.tmp, "state"),
                 "--pod-name=gleaner-agent-" + self.node, "--pod-namespace=kube-system"]
        if self.cluster:
            args.append("--cluster=" + self.cluster)
        argv = ["unshare", "--mount", "--propagation", "private", "--", "/bin/sh", "-c",
                POD_MOUNTS, "sh", os.path.join(self.bin_dir, "gleaner-agent"), "run"] + args
        return argv, {"GLEANER_SA_DIR": sa_dir, "GLEANER_REPORT_TOKEN_DIR": report_dir,
                      "GLEANER_HOSTS": hosts}
