"""The fleet part of `make demo`: ACK One's Spark job distribution, submitted to a hub.

A hub and two member clusters (each the project's test API server), gleaner-scheduler with
the hub and both members (--hub, --cluster, the colocation webhook serving every member at
/mutate-pod/<member>), and the Spark operator emulator (test/spark) in each member as its
operator and kubelet. The user's side is kubectl against the hub, with the objects the ACK
One guide applies: the PriorityClass low-priority (-1000), its ClusterPropagationPolicy, the
PropagationPolicy sparkapp-policy (customSchedulingType Gang, replicaSchedulingType
Divided) and SparkApplications carrying sparkoperator.k8s.io/koordinator-colocation: "true"
and no schedulerName. The members' nodes are report-driven: the demo posts each node's
NodeReport as its gleaner-agent would (docs/wire-format.md), with the batch capacity the
story needs; the pods run no process.

The story, each step waited for with a bounded deadline and timed:
  1. spark-pi-1 (driver + 2 executors) goes to m1, the only member with room for it;
  2. an LS surge on m1 shrinks its batch capacity; spark-pi-2 goes to m2;
  3. one of spark-pi-1's executors is evicted (the Eviction API, as the agent evicts under
     memory pressure) and Spark replaces it;
  4. a node joins m1 whose kubelet never starts pods; spark-pi-3's driver is bound there,
     cannot start, is reclaimed after --driver-start-timeout and rescheduled;
  5. every application reaches COMPLETED on the hub.
The API servers and emulators end with their stdin, which only the demo holds: killed
outright, the demo takes them along; gleaner-scheduler names the run directory on its
command line, for the clean-up fallback.
"""
import json
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "test", "e2e"))
from e2e_harness import node_report, write_kubeconfig  # noqa: E402

PY = "/usr/bin/python3"
APISERVER = os.path.join(REPO, "test", "apiserver", "apiserver.py")
EMULATOR = os.path.join(REPO, "test", "spark", "spark_emulator.py")
MEMBER_ACCESS = os.path.join(REPO, "deploy", "fleet", "member-access.yaml")
MEMBERS = ("m1", "m2")
GROUP, VERSION, PLURAL = "sparkoperator.k8s.io", "v1beta2", "sparkapplications"
DRIVER_START_TIMEOUT_S = 3
GI = 1 << 30

ACK_ONE = os.path.join(HERE, "ack-one")


def read(name):
    with open(os.path.join(ACK_ONE, name)) as f:
        return f.read()


class FleetError(RuntimeError):
    pass


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


class Fleet:
    """The processes and objects of the fleet run; `remember_pid` records each child for
    the demo's clean-up fallback."""

    def __init__(self, build, run_dir, remember_pid, seconds):
        self.bin = os.path.join(build, "bin")
        self.dir = os.path.join(run_dir, "fleet")
        os.makedirs(self.dir, exist_ok=True)
        self.remember_pid = remember_pid
        self.procs, self.all_procs = [], []
        self.urls, self.kubeconfigs = {}, {}
        self.ports = []
        self.seq = 0
        self.events = []
        self.t0 = time.monotonic()
        # Each job's run time: long enough for the steps that happen while it runs.
        self.run_s = max(3.0, seconds / 20.0)
        self.jobs = {}  # name -> {"members": [...], "state": ..., ...}
        self.shown = []  # what the run showed, in plain words, as each step happened

    # --- processes -----------------------------------------------------------------------
    def spawn(self, name, argv):
        log = open(os.path.join(self.dir, name + ".log"), "ab")
        p = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=log, stderr=subprocess.STDOUT,
                             start_new_session=True)
        log.close()
        self.procs.append(p)
        self.all_procs.append(p)
        self.remember_pid(p.pid)
        return p

    def wait_log(self, name, p, needle, deadline_s=30):
        path = os.path.join(self.dir, name + ".log")
        end = time.monotonic() + deadline_s
        while time.monotonic() < end:
            text = open(path, errors="replace").read()
            for line in text.splitlines():
                if needle in line:
                    return line
            if p.poll() is not None:
                break
            time.sleep(0.05)  # the poll interval of a bounded wait
        raise FleetError("%s did not print %r (log %s):\n%s" % (name, needle, path,
                                                                  text[-1500:]))

    def stop(self):
        for p in reversed(self.procs):
            if p.poll() is None:
                try:
                    p.stdin.close()  # the API servers and emulators also end with their stdin
                except OSError:
                    pass
                p.terminate()
        for p in self.procs:
            try:
                p.wait(5)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        self.procs = []

    # --- API helpers ---------------------------------------------------------------------
    def api(self, cluster, path, method="GET", body=None, content_type="application/json"):
        return request(self.urls[cluster] + path, method, body, content_type)

    def kubectl(self, cluster, *args, stdin=None):
        argv = ["kubectl", "--kubeconfig", self.kubeconfigs[cluster]] + list(args)
        r = subprocess.run(argv, input=stdin, capture_output=True, text=True, timeout=60)
        if r.returncode != 0:
            raise FleetError("%s failed: %s" % (" ".join(argv[3:]), r.stderr.strip()))
        return r.stdout

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

    def event(self, text):
        line = "%6.1fs  %s" % (time.monotonic() - self.t0, text)
        self.events.append(line)
        print("  fleet " + line, flush=True)

    def report(self, member, node, batch_cpu_milli):
        """The NodeReport the node's gleaner-agent posts (report-driven node)."""
        self.seq += 1
        status, _ = request(self.sched + "/api/v1/reports", "POST", node_report(
            node, self.seq, "demo-fleet", batch_cpu_milli, 16 * GI, cluster=member))
        if status != 200:
            raise FleetError("report for %s/%s refused: HTTP %d" % (member, node, status))

    def batch_free(self, member):
        _, obj = request(self.sched + "/api/v1/nodes")
        return sum(n["free"]["cpuMillicores"] for n in (obj or {}).get("nodes", [])
                   if n.get("cluster") == member)

    # --- set-up --------------------------------------------------------------------------
    def start(self):
        for name in ("hub",) + MEMBERS:
            p = self.spawn("apiserver-" + name, [PY, APISERVER, "--port", "0"])
            port = int(self.wait_log("apiserver-" + name, p, "ready port=").split("=")[1])
            self.ports.append(port)
            self.urls[name] = "http://127.0.0.1:%d" % port
            self.kubeconfigs[name] = write_kubeconfig(
                os.path.join(self.dir, name + ".kubeconfig"), self.urls[name])
        self.webhook_port = free_port()
        self.ports.append(self.webhook_port)
        for m in MEMBERS:
            self.prepare_member(m)
        argv = [os.path.join(self.bin, "gleaner-scheduler"), "run", "--listen", "127.0.0.1:0",
                "--report-auth", "none", "--tick-ms", "50",
                "--driver-start-timeout", str(DRIVER_START_TIMEOUT_S),
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
        port = int(line.split("listening on port")[1].split()[0])
        self.ports.append(port)
        self.sched = "http://127.0.0.1:%d" % port
        for m in MEMBERS:
            self.wait("the webhook's CA in %s's webhook configuration" % m,
                      lambda m=m: self.ca_bundle(m), 30)
            p = self.spawn("spark-operator-" + m, [PY, EMULATOR, "--server", self.urls[m],
                                                   "--nodes", m + "-n1", "--exit-on-stdin-eof"])
            self.wait_log("spark-operator-" + m, p, "ready")
        # The user's side: the guide's objects, applied to the hub with kubectl.
        self.kubectl("hub", "apply", "--validate=false", "-f", "-", stdin=json.dumps(
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "spark"}}))
        self.kubectl("hub", "apply", "--validate=false", "-f", os.path.join(ACK_ONE, "hub.yaml"))

    def prepare_member(self, m):
        """What the fleet's installation leaves in a member (docs/deploy.md 'A fleet'): the
        spark namespace labelled for the webhook, the PriorityClass the hub's
        ClusterPropagationPolicy distributes (ACK One's Duplicated propagation, not
        Gleaner's), the webhook configuration of deploy/fleet/member-access.yaml calling
        the webhook at /mutate-pod/<member>, and the node."""
        self.kubectl(m, "apply", "--validate=false", "-f", "-", stdin=json.dumps(
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {
                "name": "spark", "labels": {"gleaner.io/colocation": "enabled"}}}))
        self.kubectl(m, "apply", "--validate=false", "-f", "-",
                     stdin=read("hub.yaml").split("---")[0])
        docs = [d for d in yaml.safe_load_all(open(MEMBER_ACCESS)) if d]
        hook = next(d for d in docs if d["kind"] == "MutatingWebhookConfiguration")
        for w in hook["webhooks"]:
            w["clientConfig"]["url"] = "https://localhost:%d/mutate-pod/%s" % (
                self.webhook_port, m)
        self.kubectl(m, "apply", "--validate=false", "-f", "-", stdin=json.dumps(hook))
        self.hook_name = hook["metadata"]["name"]
        nodes = [m + "-n1"] + (["m1-n2"] if m == "m1" else [])
        for node in nodes:
            status, _ = self.api(m, "/api/v1/nodes", "POST", {"metadata": {"name": node}})
            self.api(m, "/api/v1/nodes/%s/status" % node, "PATCH", {"status": {
                "capacity": {"cpu": "8", "memory": "32Gi", "pods": "110"},
                "allocatable": {"cpu": "8", "memory": "32Gi", "pods": "110"}}},
                "application/merge-patch+json")

    def ca_bundle(self, m):
        _, obj = self.api(m, "/apis/admissionregistration.k8s.io/v1/"
                             "mutatingwebhookconfigurations/" + self.hook_name)
        return all(w["clientConfig"].get("caBundle") for w in (obj or {}).get("webhooks", [{}]))

    # --- the story -----------------------------------------------------------------------
    def submit(self, name, executors):
        self.kubectl("hub", "apply", "--validate=false", "-f", "-", stdin=read("spark-pi.yaml").format(
            name=name, executors=executors, run_s="%.1f" % self.run_s))
        self.jobs[name] = {"name": name, "members": [], "state": None, "executorsReplaced": 0,
                           "reclaimed": 0, "submitted": time.monotonic()}

    def placed(self, name, avoid=None):
        member = self.wait("%s placed by gleaner-scheduler" % name,
                           lambda: self.placement(name) not in (None, avoid) and
                           self.placement(name), deadline_s=60 + 3 * self.run_s)
        self.jobs[name]["members"].append(member)
        self.event("%s placed in %s%s; batch free m1 %.1f, m2 %.1f cores" % (
            name, member, "" if avoid else " (%.2f s after kubectl apply)" % (
                time.monotonic() - self.jobs[name]["submitted"]),
            self.batch_free("m1") / 1000.0, self.batch_free("m2") / 1000.0))
        return member

    def running_executors(self, member, name):
        return [p for p in self.pods(member, "spark-role=executor,sparkoperator.k8s.io/"
                                             "app-name=" + name)
                if (p.get("status") or {}).get("phase") == "Running"
                and not p["metadata"].get("deletionTimestamp")]

    def run(self):
        """The five steps; returns the summary's fleet part."""
        self.start()
        # 1. Batch capacity as the agents report it: m1 has room for a 3-CPU gang, m2 not.
        self.report("m1", "m1-n1", 5000)
        self.report("m1", "m1-n2", 0)
        self.report("m2", "m2-n1", 1500)
        self.submit("spark-pi-1", 2)
        first = self.placed("spark-pi-1")
        if first == "m1":
            self.shown.append("spark-pi-1 placed in m1, the member with batch room for it")
        self.wait("spark-pi-1's 2 executors running in %s" % first,
                  lambda: len(self.running_executors(first, "spark-pi-1")) == 2)
        # The webhook made the annotated pods batch pods of gleaner-scheduler.
        pods = self.pods(first, "sparkoperator.k8s.io/app-name=spark-pi-1")
        routed = [p for p in pods if p["spec"].get("schedulerName") == "gleaner-scheduler" and
                  "kubernetes.io/batch-cpu" in p["spec"]["containers"][0]["resources"].get(
                      "requests", {})]
        self.event("webhook: %d of %d spark-pi-1 pods given gleaner-scheduler and batch-cpu" % (
            len(routed), len(pods)))
        if pods and len(routed) == len(pods):
            self.shown.append("the colocation webhook routed every annotated pod to "
                              "gleaner-scheduler with batch resources")
        # 2. An LS surge on m1: its agent suppresses BE and reports less batch capacity;
        # m2's LS load falls and it reports more.
        before = self.batch_free("m1")
        self.report("m1", "m1-n1", 3000)
        self.report("m2", "m2-n1", 3000)
        self.wait("m1's smaller batch capacity seen", lambda: self.batch_free("m1") < before)
        self.event("LS surge on m1 (its report): batch free %.1f -> %.1f cores (m2 %.1f)" % (
            before / 1000.0, self.batch_free("m1") / 1000.0, self.batch_free("m2") / 1000.0))
        self.submit("spark-pi-2", 1)
        if self.placed("spark-pi-2") != first:
            self.shown.append("the next job went to the other member after %s's batch "
                              "capacity shrank" % first)
        # 3. Memory pressure on m1: the agent evicts an executor; Spark replaces it.
        running = self.running_executors(first, "spark-pi-1")
        vname = running[0]["metadata"]["name"]
        newest = max(int(p["metadata"]["labels"]["spark-exec-id"]) for p in running)
        status, _ = self.api(first, "/api/v1/namespaces/spark/pods/%s/eviction" % vname,
                             "POST", {"apiVersion": "policy/v1", "kind": "Eviction",
                                      "metadata": {"name": vname, "namespace": "spark"}})
        if status not in (200, 201):
            raise FleetError("eviction of %s refused: HTTP %d" % (vname, status))
        self.evictions = 1
        evicted_at = time.monotonic()
        self.event("%s/%s evicted (memory pressure on %s)" % (first, vname, first))
        # Spark never reuses an executor id: the replacement's is above every earlier one.
        self.wait("a replacement executor for spark-pi-1 running", lambda: any(
            int(p["metadata"]["labels"].get("spark-exec-id", 0)) > newest
            for p in self.running_executors(first, "spark-pi-1")))
        self.jobs["spark-pi-1"]["executorsReplaced"] += 1
        self.shown.append("an evicted executor replaced by Spark")
        self.event("spark-pi-1's replacement executor running %.2f s after the eviction" % (
            time.monotonic() - evicted_at))
        # 4. A node joins m1 whose kubelet never starts a pod; its agent reports room.
        self.report("m1", "m1-n2", 4000)
        self.submit("spark-pi-3", 1)
        bad = self.placed("spark-pi-3")
        driver = self.wait("spark-pi-3's driver bound", lambda: [
            p for p in self.pods(bad, "spark-role=driver,sparkoperator.k8s.io/app-name="
                                      "spark-pi-3") if p["spec"].get("nodeName")])[0]
        self.event("spark-pi-3's driver bound to %s/%s, whose kubelet does not start it" % (
            bad, driver["spec"]["nodeName"]))
        bound_at = time.monotonic()
        if driver["spec"]["nodeName"] == "m1-n2":
            # The reclaim deletes the copy in the member; the hub then places the job again.
            self.wait("spark-pi-3 reclaimed from %s" % bad,
                      lambda: self.app(bad, "spark-pi-3") is None, 60 + 3 * self.run_s)
            self.jobs["spark-pi-3"]["reclaimed"] += 1
            self.event("spark-pi-3 reclaimed from %s %.1f s after its driver was bound "
                       "(driver start timeout %d s)" % (bad, time.monotonic() - bound_at,
                                                        DRIVER_START_TIMEOUT_S))
            self.placed("spark-pi-3", avoid=bad)
            self.shown.append("a driver that could not start reclaimed and rescheduled")
        else:
            self.shown.append("NOT shown: a driver reclaim (spark-pi-3's driver was bound to "
                              "%s, a node that starts pods)" % driver["spec"]["nodeName"])
        # 5. Every job to its end, as the hub shows it.
        for name, job in self.jobs.items():
            job["state"] = self.wait("%s COMPLETED on the hub" % name, lambda n=name: (
                self.state("hub", n) in ("COMPLETED", "FAILED") and self.state("hub", n)),
                deadline_s=60 + 3 * self.run_s)
            job["member"] = job["members"][-1]
            self.event("%s %s on the hub (ran in %s)" % (name, job["state"], job["member"]))
        done = sum(1 for j in self.jobs.values() if j["state"] == "COMPLETED")
        self.shown.append("%d of %d applications COMPLETED on the hub" % (done, len(self.jobs)))
        return self.summary()

    def summary(self):
        jobs = [{k: j[k] for k in ("name", "member", "members", "state", "executorsReplaced",
                                   "reclaimed")} for j in self.jobs.values()]
        return {"jobs": jobs, "evictions": getattr(self, "evictions", 0),
                "ports": self.ports, "pids": [p.pid for p in self.all_procs],
                "events": self.events, "shown": self.shown}


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]

