"""The cluster the colocation end-to-end test drives: its constants (nodes, LS and
batch amounts, paths of the test API server, emulator and shipped manifests) and
ColocationHarness, the TestCase mixin that starts gleaner-scheduler with the shipped
Deployment's flags, posts agent node reports, and calls the API server and the
scheduler."""

import json
import os
import sys
import time

import yaml
from kubernetes.client.rest import ApiException

import agent_pod
from e2e_harness import Proc, ServiceHTTPS, deadline_loop, find_doc, load_yaml

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
APISERVER = os.path.join(REPO, "test", "apiserver", "apiserver.py")
EMULATOR = os.path.join(REPO, "test", "spark", "spark_emulator.py")
MANIFESTS = os.path.join(REPO, "deploy", "manifests")
EXAMPLES = os.path.join(REPO, "deploy", "examples")
PYTHON = "/usr/bin/python3"  # Debian's, with python3-kubernetes and python3-yaml

SPARK = ("sparkoperator.k8s.io", "v1beta2", "sparkapplications")
SCRIPT = "spark-emulator.gleaner.io/"
BATCH_CPU, BATCH_MEMORY = "kubernetes.io/batch-cpu", "kubernetes.io/batch-memory"
GI = 1 << 30
NODES = ("n1", "n2")
# Each node: 8 cpu / 32Gi allocatable; an LS pod requests 7500m / 24Gi of it (a Spark
# driver's 1 cpu no longer fits the regular allocatable); the agent reports 5 cpu / 16Gi
# of batch capacity (what the LS pods request but do not use).
NODE_CPU_MILLI, NODE_MEMORY = 8000, 32 * GI
LS_CPU_MILLI, LS_MEMORY = 7500, 24 * GI
BATCH = {"cpuMillicores": 5000, "memoryBytes": 16 * GI}


class ColocationHarness:
    """Mixin for a unittest.TestCase: the processes it starts (self.procs, stopped by
    stop_all), the API server client (self.api_client, self.core, self.custom) and the
    scheduler (self.scheduler_binary, its port and CA). setUp builds the cluster."""
    scheduler_binary = None  # the gleaner-scheduler to run; set by the test case

    def start(self, name, argv, stdin=False, dump_signal=None):
        proc = Proc(name, argv, self.tmp, stdin, dump_signal)
        self.procs.append(proc)
        return proc

    def start_scheduler(self):
        """gleaner-scheduler run with the shipped Deployment's flags, except where they
        name in-cluster files and ports: the kubeconfig, token file and listen addresses."""
        deployment = find_doc(load_yaml(os.path.join(MANIFESTS, "scheduler-deployment.yaml")),
                              "Deployment")
        container = next(c for c in deployment["spec"]["template"]["spec"]["containers"]
                         if "--webhook-listen" in " ".join(c.get("args") or []))
        local = {"--listen": "127.0.0.1:0", "--webhook-listen": "127.0.0.1:0",
                 "--kubeconfig": os.path.join(self.tmp, "kubeconfig")}
        args = []
        for arg in container["args"]:
            flag = arg.split("=", 1)[0]
            args.append("%s=%s" % (flag, local.pop(flag)) if flag in local else arg)
        args += ["%s=%s" % kv for kv in local.items()]
        self.scheduler_args = dict(a.split("=", 1) for a in args if "=" in a)
        with open(self.scheduler_args["--kubeconfig"], "w") as f:
            yaml.safe_dump({"apiVersion": "v1", "kind": "Config",
                            "clusters": [{"name": "test", "cluster": {"server": self.server}}],
                            "users": [{"name": "test", "user": {}}],
                            "contexts": [{"name": "test",
                                          "context": {"cluster": "test", "user": "test"}}],
                            "current-context": "test"}, f)
        sched = self.start("scheduler", [self.scheduler_binary, "run"] + args)
        self.scheduler = sched
        self.sched_port = int(sched.wait_line(
            r"gleaner-scheduler: listening on port (\d+) \(HTTPS\)", 15).group(1))
        # The port serves the certificate the scheduler keeps, issued for --report-service;
        # its CA is published in the ConfigMap the agents mount (--ca-configmap).
        ca_ns, ca_name = next(v for k, v in (a.split("=", 1) for a in args if "=" in a)
                              if k == "--ca-configmap" and v.startswith("kube-system/")).split("/")
        self.sched_ca = os.path.join(self.tmp, "scheduler-ca.crt")
        ca = self.wait_for("scheduler CA published in %s/%s" % (ca_ns, ca_name),
                           lambda: self.config_map_key(ca_ns, ca_name, "ca.crt"), 10)
        with open(self.sched_ca, "w") as f:
            f.write(ca)
        svc_ns, svc_name = self.scheduler_args["--report-service"].split("/")
        self.sched_host = "%s.%s.svc" % (svc_name, svc_ns)
        webhook_port = sched.wait_line(r"colocation webhook: listening on port (\d+)",
                                       15).group(1)
        # kube-apiserver reaches the webhook through its Service; here the Service's
        # namespace/name/port map to the scheduler's webhook port.
        svc = self.webhook_service
        self.admin("POST", "webhook-service", namespace=svc["metadata"]["namespace"],
                   name=svc["metadata"]["name"], port=svc["spec"]["ports"][0]["port"],
                   address="127.0.0.1:" + webhook_port)
        # The scheduler keeps its CA in the --webhook-secret Secret and patched it into
        # the configuration's caBundle: the API server verifies the webhook against it.
        ns, name = self.scheduler_args["--webhook-secret"].split("/")
        self.wait_for("caBundle patched into %s" % self.webhook_config["metadata"]["name"],
                      lambda: self.get_raw(
                          "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations/"
                          + self.webhook_config["metadata"]["name"])["webhooks"][0][
                          "clientConfig"].get("caBundle") == self.get_raw(
                          "/api/v1/namespaces/%s/secrets/%s" % (ns, name))["data"]["ca.crt"], 10)

    def apply_base_manifests(self):
        """What an operator applies first (kubectl apply -k deploy/manifests, the profile
        example): the namespace, PriorityClasses, the webhook configuration (its Service
        is not an object the test API server keeps: start_scheduler maps it to the
        scheduler's port), and the example ClusterColocationProfile."""
        webhook_docs = load_yaml(os.path.join(MANIFESTS, "colocation-webhook.yaml"))
        self.webhook_service = find_doc(webhook_docs, "Service")
        self.webhook_config = find_doc(webhook_docs, "MutatingWebhookConfiguration")
        self.create(find_doc(load_yaml(os.path.join(MANIFESTS, "namespace.yaml")), "Namespace"))
        for pc in load_yaml(os.path.join(MANIFESTS, "priority-classes", "priority-classes.yaml")):
            self.create(pc)
        self.create(self.webhook_config)
        self.create(find_doc(load_yaml(os.path.join(EXAMPLES, "colocation-profile.yaml")),
                             "ClusterColocationProfile"))

    def probe_webhook(self, ns):
        """The webhook answers 503 until it has listed profiles, namespaces and
        PriorityClasses (failurePolicy Fail: pods refused). A dry-run create of a
        spark-role pod until the profile's BE label comes back (the profile matches by
        namespace labels, so the webhook has seen this namespace too)."""
        probe = {"apiVersion": "v1", "kind": "Pod",
                 "metadata": {"name": "webhook-probe", "namespace": ns,
                              "labels": {"spark-role": "driver"}},
                 "spec": {"containers": [{"name": "c", "image": "busybox",
                                          "resources": {"requests": {"cpu": "100m"}}}]}}

        def answered():
            pod = self.call("POST", "/api/v1/namespaces/%s/pods" % ns, body=probe,
                            query={"dryRun": "All"})
            return pod["metadata"]["labels"].get("koordinator.sh/qosClass") == "BE"
        self.wait_for("the colocation webhook to answer", answered, 10)

    def agent_token(self, node):
        """The projected token kubelet gives the agent pod of `node` (agent_pod.agent_token)."""
        return agent_pod.agent_token(lambda m, path, body: self.call(m, path, body=body), node)

    def config_map_key(self, ns, name, key):
        try:
            return (self.get_raw("/api/v1/namespaces/%s/configmaps/%s" % (ns, name))
                    .get("data") or {}).get(key)
        except ApiException as e:
            if e.status == 404:
                return None
            raise

    def sched_request(self, method, path, body=None, token=None):
        """HTTPS to the scheduler's port, verified as the agents verify it: the published
        CA and the Service's DNS name."""
        conn = ServiceHTTPS(self.sched_port, self.sched_host, self.sched_ca)
        headers = {"Content-Type": "application/json"}
        if token:
            headers["Authorization"] = "Bearer " + token
        try:
            conn.request(method, path, body=body, headers=headers)
            resp = conn.getresponse()
            return resp.status, resp.read().decode()
        finally:
            conn.close()

    def post_node_reports(self):
        """One NodeReport per node (reporter/wire/node_report.cc to_json, version 1), as
        gleaner-agent posts them: over HTTPS, each with its own agent pod's token."""
        for seq, node in enumerate(NODES, start=1):
            report = self.post_node_report(node, seq, BATCH)
        # A node's token does not report for another node.
        other = dict(report, node=NODES[0], sequence=len(NODES) + 1)
        status, body = self.sched_request("POST", "/api/v1/reports", json.dumps(other),
                                          self.agent_tokens[NODES[-1]])
        self.assertEqual(status, 403, body)

    def post_node_report(self, node, seq, batch):
        """`node`'s agent reports `batch` of batch capacity (sequence `seq`); returns the
        report it posted."""
        if not getattr(self, "agent_tokens", None):
            self.agent_tokens = {n: self.agent_token(n) for n in NODES}
        report = {
            "version": 1, "node": node, "cluster": "", "sequence": seq,
            "timestampUnixMillis": int(time.time() * 1000),
            "capacity": {"cpuMillicores": NODE_CPU_MILLI, "memoryBytes": NODE_MEMORY},
            "allocatable": {"cpuMillicores": NODE_CPU_MILLI, "memoryBytes": NODE_MEMORY},
            "batchAllocatable": batch, "batchUnavailableReason": None,
            "usage": {"node": {"cpuMillicores": 3000, "memoryBytes": 16 * GI},
                      "system": {"cpuMillicores": 500, "memoryBytes": 2 * GI},
                      "ls": {"cpuMillicores": 2500, "memoryBytes": 14 * GI},
                      "be": {"cpuMillicores": 0, "memoryBytes": 0}},
            "bePods": [],
            "suppress": {"active": False, "policy": "none", "beCpuLimitMillicores": 0},
            "interference": {"lsPods": []}}
        status, body = self.sched_request("POST", "/api/v1/reports", json.dumps(report),
                                          self.agent_tokens[node])
        self.assertEqual(status, 200, "report for %s refused: %s" % (node, body))
        return report

    def stop_all(self):
        # Inside a cleanup _outcome.success reads True; the result has the failures.
        result = getattr(getattr(self, "_outcome", None), "result", None)
        failed = result is None or any(
            getattr(test, "test_case", test) is self  # a subTest's failure names its test
            for test, _ in list(result.failures) + list(result.errors))
        if self.recorder is not None:
            self.recorder.stopping.set()
        for proc in reversed(self.procs):
            proc.stop()
        if self.recorder is not None:
            self.recorder.join(2)  # its watch ends with the API server
        if getattr(self, "api_client", None) is not None:
            self.api_client.rest_client.pool_manager.clear()  # its kept-alive connections
            self.api_client.close()
        if failed or os.environ.get("GLEANER_E2E_KEEP_LOGS"):
            for proc in self.procs:
                sys.stderr.write("\n===== %s log (%s) =====\n%s\n" % (
                    proc.name, " ".join(proc.proc.args[:3]), proc.text()))
            sys.stderr.flush()

    # --- helpers ---------------------------------------------------------------------------
    def log(self, what):
        if os.environ.get("GLEANER_E2E_VERBOSE"):
            sys.stderr.write("[%6.2fs] %s\n" % (time.monotonic() - self.t0, what))

    def wait_for(self, what, fn, timeout):
        last = None
        for _ in deadline_loop(timeout):
            try:
                last = fn()
            except (ApiException, OSError, KeyError, TypeError, ValueError) as e:
                last = e
            else:
                if last:
                    return last
        self.fail("timed out after %.0fs waiting for %s (last: %r)\n%s"
                  % (timeout, what, last, self.scheduler_state()))

    def scheduler_state(self):
        """The scheduler's jobs and nodes, for failure messages."""
        if not getattr(self, "sched_port", None):
            return ""
        try:
            return "scheduler /api/v1/jobs: %s\nscheduler /api/v1/nodes: %s" % (
                json.dumps(self.sched("/api/v1/jobs")), json.dumps(self.sched("/api/v1/nodes")))
        except (OSError, ValueError) as e:
            return "scheduler state unavailable: %r" % e

    def call(self, method, path, body=None, query=None, content_type="application/json"):
        resp = self.api_client.call_api(
            path, method, query_params=list((query or {}).items()), body=body,
            header_params={"Content-Type": content_type, "Accept": "application/json"},
            _preload_content=False, _return_http_data_only=True)
        data = resp.data
        return json.loads(data) if data else None

    def get_raw(self, path):
        return self.call("GET", path)

    def admin(self, method, what, **query):
        return self.call(method, "/_admin/" + what, query={k: str(v) for k, v in query.items()})

    def create(self, obj):
        """POSTs a manifest object to its collection (the path from apiVersion and kind)."""
        kind, api_version = obj["kind"], obj["apiVersion"]
        plural = {"Namespace": "namespaces", "Node": "nodes", "Pod": "pods",
                  "PriorityClass": "priorityclasses",
                  "MutatingWebhookConfiguration": "mutatingwebhookconfigurations",
                  "ClusterColocationProfile": "clustercolocationprofiles",
                  "SparkApplication": "sparkapplications"}[kind]
        base = "/api/v1" if api_version == "v1" else "/apis/" + api_version
        ns = obj["metadata"].get("namespace")
        path = base + ("/namespaces/" + ns if ns else "") + "/" + plural
        return self.call("POST", path, body=obj)

    def node(self, name):
        return self.get_raw("/api/v1/nodes/" + name)

    def pod(self, ns, name):
        try:
            return self.get_raw("/api/v1/namespaces/%s/pods/%s" % (ns, name))
        except ApiException as e:
            if e.status == 404:
                return None
            raise

    def pods(self, ns, selector):
        return self.call("GET", "/api/v1/namespaces/%s/pods" % ns,
                         query={"labelSelector": selector})["items"]

    def app(self, ns, name):
        return self.custom.get_namespaced_custom_object(*SPARK[:2], ns, SPARK[2], name)

    def app_state(self, ns, name):
        return ((self.app(ns, name).get("status") or {}).get("applicationState") or {}).get(
            "state")

    def events(self, ns, involved):
        return [e for e in self.call("GET", "/api/v1/namespaces/%s/events" % ns)["items"]
                if e["involvedObject"].get("name") == involved]

    def sched(self, path):
        status, body = self.sched_request("GET", path)
        if status != 200:
            raise OSError("scheduler GET %s: HTTP %d %s" % (path, status, body))
        return body if path == "/metrics" else json.loads(body)

    def job(self, ns, app_name):
        """The scheduler's job of the application (the gang key cluster/namespace/app)."""
        prefix = "%s/%s/%s#" % (self.scheduler_args.get("--cluster-name", "default"), ns,
                                app_name)
        jobs = [j for j in self.sched("/api/v1/jobs")["jobs"] if j["name"].startswith(prefix)]
        return jobs[-1] if jobs else None
