#!/usr/bin/python3
"""The real gleaner-agent reporting to the real gleaner-scheduler over HTTPS with its pod's
projected ServiceAccount token, the scheduler checking it with the test API server's
TokenReview:

- an agent started before the scheduler's CA exists (the ConfigMap mounted optional: true)
  waits for it, then its reports are accepted once the CA file appears;
- an agent holding node-a's token that claims to be node-b is refused (403) and node-b
  never appears;
- a made-up token never reaches the API server (refused unread, 401);
- a certificate renewed in --tls-cert-dir is served without a restart (--tls-reload-seconds).

The agents run read-only (--no-enforce --dry-run, pods and Node from files).

Usage: agent_identity_e2e_test.py --bin-dir BUILD/bin   (exit 77: binary missing)"""

import http.client
import json
import os
import ssl
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from e2e_harness import (Proc, ServiceHTTPS, deadline_loop, make_certificates,  # noqa: E402
                         openssl, run_with_bin_dir)  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
APISERVER = os.path.join(HERE, "..", "apiserver", "apiserver.py")
BIN_DIR = None
AGENT_NS, AGENT_SA = "kube-system", "gleaner-agent"


class AgentIdentity(unittest.TestCase):
    def setUp(self):
        for b in ("gleaner-agent", "gleaner-scheduler"):
            if not os.access(os.path.join(BIN_DIR, b), os.X_OK):
                raise unittest.SkipTest("no %s in %s" % (b, BIN_DIR))
        self.tmp = tempfile.TemporaryDirectory(prefix="gleaner-identity-")
        self.dir = self.tmp.name
        self.procs = []
        self.addCleanup(self.stop_all)
        api = self.start("apiserver", ["/usr/bin/python3", APISERVER, "--port", "0"], stdin=True)
        self.api_port = int(api.wait_line(r"ready port=(\d+)", 20).group(1))
        kubeconfig = os.path.join(self.dir, "kubeconfig")
        with open(kubeconfig, "w") as f:
            json.dump({"apiVersion": "v1", "kind": "Config", "current-context": "t",
                       "clusters": [{"name": "t", "cluster": {
                           "server": "http://127.0.0.1:%d" % self.api_port}}],
                       "users": [{"name": "t", "user": {}}],
                       "contexts": [{"name": "t", "context": {"cluster": "t", "user": "t"}}]}, f)
        self.token_file = os.path.join(self.dir, "token")
        with open(self.token_file, "w") as f:
            f.write(self.agent_token("node-a"))
        self.ca_crt, tls = make_certificates(self.dir)
        self.tls = tls
        sched = self.start("scheduler", [
            os.path.join(BIN_DIR, "gleaner-scheduler"), "run", "--listen", "127.0.0.1:0",
            "--kubeconfig", kubeconfig, "--tls-cert-dir", tls, "--tls-reload-seconds", "1",
            "--agent-service-account", "%s/%s" % (AGENT_NS, AGENT_SA)])
        sched.wait_line(r"reports authenticated by token-review", 20)
        self.port = int(sched.wait_line(r"listening on port (\d+) \(HTTPS\)", 20).group(1))

    def api(self, method, path, body=None):
        conn = http.client.HTTPConnection("127.0.0.1", self.api_port, timeout=10)
        try:
            conn.request(method, path, body=json.dumps(body) if body is not None else None,
                         headers={"Content-Type": "application/json"})
            resp = conn.getresponse()
            data = resp.read()
            self.assertLess(resp.status, 300, "%s %s: %s" % (method, path, data))
            return json.loads(data)
        finally:
            conn.close()

    def agent_token(self, node):
        """What kubelet writes into the agent pod's projected token volume."""
        base = "/api/v1/namespaces/" + AGENT_NS
        if not self.api("GET", base + "/serviceaccounts")["items"]:
            self.api("POST", base + "/serviceaccounts", {"metadata": {"name": AGENT_SA}})
        self.api("POST", "/api/v1/nodes", {"metadata": {"name": node}})
        pod = self.api("POST", base + "/pods", {
            "metadata": {"name": "gleaner-agent-" + node},
            "spec": {"serviceAccountName": AGENT_SA, "nodeName": node,
                     "containers": [{"name": "agent", "image": "gleaner"}]}})
        issued = self.api("POST", base + "/serviceaccounts/%s/token" % AGENT_SA, {
            "spec": {"audiences": ["gleaner-scheduler"], "expirationSeconds": 3600,
                     "boundObjectRef": {"kind": "Pod", "apiVersion": "v1",
                                        "name": pod["metadata"]["name"],
                                        "uid": pod["metadata"]["uid"]}}})
        return issued["status"]["token"]

    def start(self, name, argv, stdin=False):
        p = Proc(name, argv, self.dir, stdin=stdin)
        self.procs.append(p)
        return p

    def start_agent(self, name, node, ca_file):
        files = os.path.join(self.dir, name)
        os.makedirs(files)
        with open(os.path.join(files, "pods.json"), "w") as f:
            json.dump({"kind": "PodList", "apiVersion": "v1", "items": []}, f)
        with open(os.path.join(files, "node.json"), "w") as f:
            json.dump({"apiVersion": "v1", "kind": "Node", "metadata": {"name": node},
                       "status": {"capacity": {"cpu": "2", "memory": "8Gi"},
                                  "allocatable": {"cpu": "2", "memory": "8Gi"}}}, f)
        return self.start(name, [
            os.path.join(BIN_DIR, "gleaner-agent"), "run", "--node-name", node,
            "--scheduler-url", "https://localhost:%d/api/v1/reports" % self.port,
            "--scheduler-ca-file", ca_file, "--token-file", self.token_file,
            "--no-enforce", "--no-ebpf", "--dry-run", "--state-dir", "",
            "--pods-file", os.path.join(files, "pods.json"),
            "--node-file", os.path.join(files, "node.json"),
            "--interval", "200", "--metrics-addr", "127.0.0.1:0"])

    def scheduler(self, path):
        conn = ServiceHTTPS(self.port, "localhost", self.ca_crt)
        try:
            conn.request("GET", path)
            resp = conn.getresponse()
            return resp.status, resp.read().decode()
        finally:
            conn.close()

    def nodes(self):
        status, body = self.scheduler("/api/v1/nodes")
        self.assertEqual(status, 200, body)
        return {n["name"] for n in json.loads(body)["nodes"]}

    def rejected(self, reason):
        _, body = self.scheduler("/metrics")
        for line in body.splitlines():
            if line.startswith('gleaner_scheduler_reports_rejected_total{reason="%s"}' % reason):
                return float(line.split()[-1])
        return 0.0

    def stop_all(self):
        for p in reversed(self.procs):
            p.stop()
        result = getattr(getattr(self, "_outcome", None), "result", None)
        failed = result is None or any(
            getattr(test, "test_case", test) is self
            for test, _ in list(result.failures) + list(result.errors))
        if failed or os.environ.get("GLEANER_E2E_KEEP_LOGS"):
            for p in self.procs:
                print("---- %s ----\n%s" % (p.name, p.text()))
        self.tmp.cleanup()

    def test_agent_waits_for_the_ca_then_reports_for_its_own_node_only(self):
        later_ca = os.path.join(self.dir, "scheduler-ca", "ca.crt")
        agent = self.start_agent("agent-a", "node-a", later_ca)
        agent.wait_line(r"reports wait for it", 20)
        self.assertNotIn("node-a", self.nodes())
        # kubelet mounts the ConfigMap once the scheduler has published it.
        os.makedirs(os.path.dirname(later_ca))
        with open(later_ca + ".tmp", "w") as f, open(self.ca_crt) as ca:
            f.write(ca.read())
        os.rename(later_ca + ".tmp", later_ca)
        for _ in deadline_loop(20, 0.1):
            if "node-a" in self.nodes():
                break
        self.assertIn("node-a", self.nodes(), agent.text())

        # node-a's token, claiming node-b: refused, never listed.
        impostor = self.start_agent("impostor", "node-b", self.ca_crt)
        impostor.wait_line(r"HTTP 403", 20)
        self.assertGreaterEqual(self.rejected("forbidden"), 1)
        self.assertNotIn("node-b", self.nodes())

    def test_a_made_up_token_is_refused_unread(self):
        conn = ServiceHTTPS(self.port, "localhost", self.ca_crt)
        try:
            conn.request("POST", "/api/v1/reports", body="{}", headers={
                "Authorization": "Bearer s3cret", "Content-Type": "application/json"})
            resp = conn.getresponse()
            self.assertEqual(resp.status, 401, resp.read())
        finally:
            conn.close()
        reviews = self.api("GET", "/_admin/requests")
        self.assertFalse([r for r in reviews if r["path"].endswith("/tokenreviews")],
                         "a review was asked for a token that cannot be an agent's")

    def test_a_renewed_certificate_is_served_without_a_restart(self):
        served = ssl.get_server_certificate(("127.0.0.1", self.port))
        with open(os.path.join(self.tls, "tls.crt")) as f:
            self.assertEqual(ssl.PEM_cert_to_DER_cert(served), ssl.PEM_cert_to_DER_cert(f.read()))
        # cert-manager's renewal: a new key and certificate from the same CA, swapped in.
        renewed = os.path.join(self.dir, "renewed")
        os.makedirs(renewed)
        openssl("req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
                "-nodes", "-subj", "/CN=localhost", "-keyout", os.path.join(renewed, "tls.key"),
                "-out", os.path.join(renewed, "tls.csr"))
        openssl("x509", "-req", "-in", os.path.join(renewed, "tls.csr"), "-CA", self.ca_crt,
                "-CAkey", os.path.join(self.dir, "ca.key"), "-CAcreateserial", "-days", "1",
                "-extfile", os.path.join(self.dir, "ext.cnf"),
                "-out", os.path.join(renewed, "tls.crt"))
        for name in ("tls.key", "tls.crt"):
            os.replace(os.path.join(renewed, name), os.path.join(self.tls, name))
        with open(os.path.join(self.tls, "tls.crt")) as f:
            wanted = ssl.PEM_cert_to_DER_cert(f.read())
        for _ in deadline_loop(10, 0.2):
            now = ssl.get_server_certificate(("127.0.0.1", self.port))
            if ssl.PEM_cert_to_DER_cert(now) == wanted:
                break
        else:
            self.fail("the renewed certificate was not served within 10 s (--tls-reload-seconds 1)")
        # Still trusted by the agents' CA: a request over it is answered.
        conn = ServiceHTTPS(self.port, "localhost", self.ca_crt)
        try:
            conn.request("GET", "/healthz")
            self.assertEqual(conn.getresponse().status, 200)
        finally:
            conn.close()


if __name__ == "__main__":
    run_with_bin_dir(globals(), "gleaner-agent", "gleaner-scheduler")
