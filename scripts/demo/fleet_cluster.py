"""The fleet run's clusters and processes (fleet.py's story runs on them): a hub and
members m1, m2 as the project's test API servers, gleaner-scheduler with the hub and both
members, the Spark operator emulator in each member (m1's also the kubelet of the real node
m1-n1, fleet_node.py), the ACK One objects applied to the hub with kubectl, and the reports
of the report-driven nodes m1-n2 and m2-n1 posted as their agents would."""
import json
import os
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(REPO, "test", "e2e"))
import fleet_node  # noqa: E402
from agent_pod import agent_token  # noqa: E402
from e2e_harness import ServiceHTTPS, node_report, write_kubeconfig  # noqa: E402
from fleet_node import FleetError, NotShown, free_port  # noqa: E402

PY = "/usr/bin/python3"
APISERVER = os.path.join(REPO, "test", "apiserver", "apiserver.py")
EMULATOR = os.path.join(REPO, "test", "spark", "spark_emulator.py")
MEMBER_ACCESS = os.path.join(REPO, "deploy", "fleet", "member-access.yaml")
PRIORITY_CLASSES = os.path.join(REPO, "deploy", "manifests", "priority-classes",
                                "priority-classes.yaml")
MEMBERS = ("m1", "m2")
REPORT_DRIVEN = (("m1", "m1-n2"), ("m2", "m2-n1"))
GROUP, VERSION, PLURAL = "sparkoperator.k8s.io", "v1beta2", "sparkapplications"
DRIVER_START_TIMEOUT_S = 3
# The scheduler's reclaim hold, shortened from its 300 s default to fit the story: a job that
# lost an executor to an eviction on a node goes back there once the node's room for it has
# held this long.
RECLAIM_HOLD_S = 8
SCHED_HOST = "gleaner-scheduler.gleaner-system.svc"  # --report-service's DNS name
GI = 1 << 30
ACK_ONE = os.path.join(HERE, "ack-one")


def read(name):
    with open(os.path.join(ACK_ONE, name)) as f:
        return f.read()


def request(url, method="GET", body=None, content_type="application/json"):
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url, data=data, method=method,
                                 headers={"Content-Type": content_type})
    try:
        with urllib.request.urlopen(req, timeout=5) as r:
            text = r.read().decode()
            return r.status, (json.loads(text) if text else None)
    except urllib.error.HTTPError as e:
        return e.code, None



class FleetCluster:
    """The processes and objects of the fleet run; `remember_pid` records each child and
    `remember_scratch` the real node's scratch hierarchy for the demo's clean-up fallback."""

    def __init__(self, build, run_dir, remember_pid, seconds, remember_scratch=lambda s: None):
        self.bin = os.path.join(build, "bin")
        self.dir = os.path.join(run_dir, "fleet")
        os.makedirs(self.dir, exist_ok=True)
        self.remember_pid, self.remember_scratch = remember_pid, remember_scratch
        self.procs, self.all_procs = [], []
        self.gleaner = []  # (name, Popen) of each gleaner-agent and gleaner-scheduler
        self.stop_failures = []  # a Gleaner binary that did not exit 0 when stopped
        self.urls, self.kubeconfigs, self.tokens = {}, {}, {}
        self.ports = []
        self.seq = 0
        self.events = []
        self.t0 = time.monotonic()
        # Each job's run time: long enough for the steps that happen while it runs;
        # spark-pi-1 runs through steps 1-3 (a surge, then memory pressure, an eviction and a
        # replacement, each waiting for BE CPU or batch room while the machine is busy).
        # Step 3 begins some 55-65 s after spark-pi-1's submission (two 8 s surges, each
        # preceded by BE's climb back to half a core: the agent's slo controller regrows BE
        # at 1 % of the node a second above its last cut, 25-35 s from its floor) and may
        # wait 60 s for that climb, then 30 s for the eviction and the replacement: with 90 s
        # it had 0-8 s left and failed in CI, "not within 0s".
        self.run_s = max(3.0, seconds / 20.0)
        self.long_s = max(150.0, seconds / 3.0)
        self.jobs = {}  # name -> {"members": [...], "state": ..., ...}
        self.shown = []  # what the run showed, in plain words, as each step happened
        self.steps_shown, self.not_shown = [], []  # fleet.STEPS keys; {"step", "reason"}
        self.first = None  # the member spark-pi-1 went to
        self.node = None  # the real node m1-n1 (fleet_node.RealNode)
        self.rooms = {}  # report-driven (member, node) -> the batch millicores reported
        self.reporting, self.report_lock = threading.Event(), threading.Lock()
        self.meter = self.probe = self.latency = None
        self.real = {"node": fleet_node.NODE, "member": fleet_node.MEMBER}

    # --- processes -----------------------------------------------------------------------
    def spawn(self, name, argv, env=None):
        log = open(os.path.join(self.dir, name + ".log"), "ab")
        p = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=log, stderr=subprocess.STDOUT,
                             start_new_session=True, env=dict(os.environ, **(env or {})))
        log.close()
        self.procs.append(p)
        self.all_procs.append(p)
        self.remember_pid(p.pid)
        # The agent starts under unshare and a shell that execs it: its argv names it later.
        if any(os.path.basename(a) in ("gleaner-agent", "gleaner-scheduler") for a in argv):
            self.gleaner.append((name, p))
        return p

    def check_gleaner(self):
        """FleetError when a Gleaner binary exited before the story stopped it: a crash is
        Gleaner's failure, never a step the machine could not show."""
        gone = ["%s exited with status %d (log %s)" % (
            name, p.returncode, os.path.join(self.dir, name + ".log"))
            for name, p in self.gleaner if p in self.procs and p.poll() is not None]
        if gone:
            raise FleetError("; ".join(gone))

    def wait_log(self, name, p, needle, deadline_s=30):
        path = os.path.join(self.dir, name + ".log")
        end = time.monotonic() + deadline_s
        while time.monotonic() < end:
            with open(path, errors="replace") as f:
                text = f.read()
            for line in text.splitlines():
                if needle in line:
                    return line
            if p.poll() is not None:
                break
            time.sleep(0.05)  # the poll interval of a bounded wait
        raise FleetError("%s did not print %r (log %s):\n%s" % (name, needle, path,
                                                                  text[-1500:]))

    def stop(self):
        """Every process (the agent first: it gives kubelet's values back), then the real
        node's scratch hierarchy once its emulator has stopped its pods."""
        self.reporting.set()
        for meter in (self.meter, self.probe, self.latency):
            if meter:
                meter.stop()
        for p in reversed(self.procs):
            if p.poll() is None:
                try:
                    p.stdin.close()  # the API servers and emulators also end with their stdin
                except OSError:
                    pass
                p.terminate()
        for p in self.procs:
            try:
                p.wait(10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        # SIGTERM stops either binary with 0 after it put back what it changed (the agent's
        # knobs); anything else (a crash on the way out, killed after the grace) is a failure.
        self.stop_failures += ["%s exited with status %d when stopped (log %s)" % (
            name, p.returncode, os.path.join(self.dir, name + ".log"))
            for name, p in self.gleaner if p in self.procs and p.returncode != 0]
        self.procs = []
        if self.node:
            self.node.remove()

    # --- API helpers ---------------------------------------------------------------------
    def api(self, cluster, path, method="GET", body=None, content_type="application/json"):
        return request(self.urls[cluster] + path, method, body, content_type)

    def call(self, cluster):
        """call(method, path, body) on `cluster`'s API: the object, or FleetError."""
        def call(method, path, body):
            status, obj = self.api(cluster, path, method, body)
            if status not in (200, 201):
                raise FleetError("%s %s on %s: HTTP %d" % (method, path, cluster, status))
            return obj
        return call

    def kubectl(self, cluster, *args, stdin=None):
        argv = ["kubectl", "--kubeconfig", self.kubeconfigs[cluster]] + list(args)
        r = subprocess.run(argv, input=stdin, capture_output=True, text=True, timeout=60)
        if r.returncode != 0:
            raise FleetError("%s failed: %s" % (" ".join(argv[3:]), r.stderr.strip()))
        return r.stdout

    def sched_request(self, method, path, body=None, token=None):
        """HTTPS to the scheduler's port, verified as the agents verify it: the CA it
        publishes and its Service's DNS name."""
        conn = ServiceHTTPS(self.sched_port, SCHED_HOST, self.sched_ca)
        headers = {"Content-Type": "application/json"}
        if token:
            headers["Authorization"] = "Bearer " + token
        try:
            conn.request(method, path, body=json.dumps(body) if body is not None else None,
                         headers=headers)
            resp = conn.getresponse()
            text = resp.read().decode()
            return resp.status, (json.loads(text) if text and resp.status == 200 else text)
        finally:
            conn.close()

    def app(self, cluster, name):
        status, obj = self.api(cluster, "/apis/%s/%s/namespaces/spark/%s/%s" % (
            GROUP, VERSION, PLURAL, name))
        return obj if status == 200 else None

    def state(self, cluster, name):
        obj = self.app(cluster, name) or {}
        return ((obj.get("status") or {}).get("applicationState") or {}).get("state")

    def placement(self, name):
        obj = self.app("hub", name) or {}
        return (obj.get("metadata", {}).get("annotations") or {}).get("gleaner.io/placement")

    def pods(self, cluster, selector):
        _, obj = self.api(cluster, "/api/v1/namespaces/spark/pods?labelSelector=" + selector)
        return (obj or {}).get("items", [])

    def wait(self, what, predicate, deadline_s=60):
        end = time.monotonic() + deadline_s
        while time.monotonic() < end:
            value = predicate()
            if value:
                return value
            time.sleep(0.05)  # the poll interval of a bounded wait
        raise FleetError("not within %ds: %s" % (deadline_s, what))

    def precondition(self, what, predicate, deadline_s, seen):
        """wait() for what the machine has to give a step (batch room, BE CPU), not for
        what Gleaner must do: past the deadline the step is not shown (NotShown), with
        `seen()`, the figures the wait was reading, in the reason. Read once even with no
        time left (a bound from a job's remaining run can be)."""
        value = predicate()
        if value:
            return value
        try:
            return self.wait(what, predicate, max(0, deadline_s))
        except NotShown:
            raise
        except FleetError:
            self.check_gleaner()  # no room because the agent is gone is no busy machine
            raise NotShown("not within %ds: %s (seen at the end: %s)" % (
                max(0, deadline_s), what, seen())) from None

    def event(self, text):
        line = "%6.1fs  %s" % (time.monotonic() - self.t0, text)
        self.events.append(line)
        print("  fleet " + line, flush=True)

    # --- the report-driven nodes -----------------------------------------------------------
    def report(self, member, node, batch_cpu_milli=None):
        """The NodeReport the node's gleaner-agent posts (report-driven node), with its own
        agent pod's token: this batch room from now on (None: the last one again); the
        reporter thread posts it again every 2 s."""
        with self.report_lock:  # one sequence, in order, and never an older room after
            if batch_cpu_milli is not None:
                self.rooms[(member, node)] = batch_cpu_milli
            self.seq += 1
            status, body = self.sched_request("POST", "/api/v1/reports", node_report(
                node, self.seq, "demo-fleet", self.rooms[(member, node)], 16 * GI,
                cluster=member), self.tokens[node])
        if status != 200:
            raise FleetError("report for %s/%s refused: HTTP %d %s" % (member, node, status,
                                                                        body))

    def keep_reporting(self):
        while not self.reporting.wait(2.0):
            for member, node in list(self.rooms):
                try:
                    self.report(member, node)
                except (FleetError, OSError) as e:
                    self.event("report for %s/%s failed: %s" % (member, node, e))

    def nodes(self):
        status, obj = self.sched_request("GET", "/api/v1/nodes")
        return (obj or {}).get("nodes", []) if status == 200 else []

    def batch_free(self, member, node=None):
        return sum(n["free"]["cpuMillicores"] for n in self.nodes()
                   if n.get("cluster") == member and node in (None, n["name"]))

    def node_batch_cpu(self):
        """The batch-cpu on m1-n1's Node (millicores; 0 when not written yet)."""
        _, obj = self.api(fleet_node.MEMBER, "/api/v1/nodes/" + fleet_node.NODE)
        return int(((obj or {}).get("status") or {}).get("allocatable", {}).get(
            "kubernetes.io/batch-cpu", 0))

    def real_free(self):
        """The scheduler's free batch room on the real node (None: not reported yet)."""
        n = next((n for n in self.nodes() if n["name"] == fleet_node.NODE and
                  n.get("cluster") == fleet_node.MEMBER), None)
        return n["free"]["cpuMillicores"] if n and n.get("batch") else None

    # --- set-up --------------------------------------------------------------------------
    def start(self):
        self.node = fleet_node.RealNode(self, self.remember_scratch)
        for name in ("hub",) + MEMBERS:
            p = self.spawn("apiserver-" + name, [PY, APISERVER, "--port", "0",
                                                 "--bookmark-interval", "0.5"])
            port = int(self.wait_log("apiserver-" + name, p, "ready port=").split("=")[1])
            self.ports.append(port)
            self.urls[name] = "http://127.0.0.1:%d" % port
            self.kubeconfigs[name] = write_kubeconfig(
                os.path.join(self.dir, name + ".kubeconfig"), self.urls[name])
        self.webhook_port = free_port()
        self.ports.append(self.webhook_port)
        for m in MEMBERS:
            self.prepare_member(m)
        self.start_scheduler()
        for m in MEMBERS:
            self.wait("the webhook's CA in %s's webhook configuration" % m,
                      lambda m=m: self.ca_bundle(m), 30)
        # Each node's agent token (a TokenRequest bound to its agent pod, as kubelet
        # projects it), issued by its member's API server, which the scheduler asks.
        for m, node in REPORT_DRIVEN + ((fleet_node.MEMBER, fleet_node.NODE),):
            self.tokens[node] = agent_token(self.call(m), node)
        for m in MEMBERS:
            extra = self.node.emulator_args() if m == fleet_node.MEMBER else []
            p = self.spawn("spark-operator-" + m, [PY, EMULATOR, "--server", self.urls[m],
                                                   "--nodes", m + "-n1", "--exit-on-stdin-eof",
                                                   "--verbose"] + extra)
            kubelet = self.wait_log("spark-operator-" + m, p, "kubelet node=") if extra else ""
            self.wait_log("spark-operator-" + m, p, "ready")
            if extra:
                self.node.start(kubelet)
        threading.Thread(target=self.keep_reporting, daemon=True).start()
        # The user's side: the guide's objects, applied to the hub with kubectl.
        self.kubectl("hub", "apply", "--validate=false", "-f", "-", stdin=json.dumps(
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "spark"}}))
        self.kubectl("hub", "apply", "--validate=false", "-f", os.path.join(ACK_ONE, "hub.yaml"))

    def start_scheduler(self):
        """--report-auth token-review and HTTPS with the webhook's certificate, as the
        shipped Deployment runs it; the CA is published in m1 (the webhook's cluster)."""
        argv = [os.path.join(self.bin, "gleaner-scheduler"), "run", "--listen", "127.0.0.1:0",
                "--report-auth", "token-review",
                "--agent-service-account", "kube-system/gleaner-agent",
                "--agent-token-audience", "gleaner-scheduler",
                "--tls-from-webhook", "--report-service", "gleaner-system/gleaner-scheduler",
                "--ca-configmap", "kube-system/gleaner-scheduler-ca",
                "--tick-ms", "50", "--driver-start-timeout", str(DRIVER_START_TIMEOUT_S),
                "--reclaim-hold", str(RECLAIM_HOLD_S),
                "--hub", "hub=" + self.kubeconfigs["hub"],
                "--hub-policy-group", "policy.one.alibabacloud.com",
                "--hub-cluster-objects", "false",
                "--webhook-listen", "127.0.0.1:%d" % self.webhook_port,
                "--webhook-secret", "gleaner-system/gleaner-webhook-tls",
                "--webhook-cluster", MEMBERS[0], "--webhook-dns-name", "localhost"]
        for m in MEMBERS:
            argv += ["--cluster", "%s=%s" % (m, self.kubeconfigs[m])]
        p = self.spawn("scheduler", argv)
        line = self.wait_log("scheduler", p, "gleaner-scheduler: listening on port")
        self.sched_port = int(line.split("listening on port")[1].split()[0])
        self.ports.append(self.sched_port)
        self.sched_host = SCHED_HOST
        ca = self.wait("the scheduler's CA published in m1", lambda: ((self.api(
            "m1", "/api/v1/namespaces/kube-system/configmaps/gleaner-scheduler-ca")[1] or {})
            .get("data") or {}).get("ca.crt"), 30)
        self.sched_ca = os.path.join(self.dir, "scheduler-ca.crt")
        with open(self.sched_ca, "w") as f:
            f.write(ca)

    def prepare_member(self, m):
        """What the fleet's installation leaves in a member (docs/deploy.md 'A fleet'): the
        spark namespace labelled for the webhook, the PriorityClass the hub's
        ClusterPropagationPolicy distributes (ACK One's Duplicated propagation, not
        Gleaner's) and Gleaner's own, the webhook configuration of
        deploy/fleet/member-access.yaml calling the webhook at /mutate-pod/<member>, and the
        nodes: the real one with this machine's CPUs and NODE_MEMORY_MIB (fleet_node.py)."""
        self.kubectl(m, "apply", "--validate=false", "-f", "-", stdin=json.dumps(
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {
                "name": "spark", "labels": {"gleaner.io/colocation": "enabled"}}}))
        self.kubectl(m, "apply", "--validate=false", "-f", "-",
                     stdin=read("hub.yaml").split("---")[0])
        self.kubectl(m, "apply", "--validate=false", "-f", PRIORITY_CLASSES)
        with open(MEMBER_ACCESS) as f:
            docs = [d for d in yaml.safe_load_all(f) if d]
        hook = next(d for d in docs if d["kind"] == "MutatingWebhookConfiguration")
        for w in hook["webhooks"]:
            w["clientConfig"]["url"] = "https://localhost:%d/mutate-pod/%s" % (
                self.webhook_port, m)
        self.kubectl(m, "apply", "--validate=false", "-f", "-", stdin=json.dumps(hook))
        self.hook_name = hook["metadata"]["name"]
        nodes = [m + "-n1"] + (["m1-n2"] if m == "m1" else [])
        for node in nodes:
            amounts = fleet_node.node_amounts() if node == fleet_node.NODE else {
                "cpu": "8", "memory": "32Gi", "pods": "110"}
            self.api(m, "/api/v1/nodes", "POST", {"metadata": {
                "name": node, "labels": {"kubernetes.io/hostname": node}}})
            self.api(m, "/api/v1/nodes/%s/status" % node, "PATCH", {"status": {
                "capacity": amounts, "allocatable": amounts,
                "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady"}]}},
                "application/merge-patch+json")

    def ca_bundle(self, m):
        _, obj = self.api(m, "/apis/admissionregistration.k8s.io/v1/"
                             "mutatingwebhookconfigurations/" + self.hook_name)
        return all(w["clientConfig"].get("caBundle") for w in (obj or {}).get("webhooks", [{}]))

