"""The kubelet's HTTP API for a real emulated node, the part gleaner-agent reads
(kube/kubelet_client.cc): GET /pods, the node's pods as a v1 PodList as
pkg/kubelet/server/server.go's getPods encodes them, and GET /healthz. With a certificate it
serves HTTPS like the authenticated port (10250): a request without a bearer token, or with
another token than the one it was given, gets 401 "Unauthorized" as the server's
InstallAuthFilter answers with anonymous authentication off (as kubeadm configures kubelet;
with it on, an anonymous request passes authentication and the authorizer answers 403);
without a certificate it is the read-only port (10255), open to all."""

import http.server
import json
import os
import ssl
import sys
import threading

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(
    __file__))), "apiserver"))
import kubeapi  # noqa: E402
from tls_server import serve_tls  # noqa: E402


class KubeletServer:
    def __init__(self, node, cache, port=0, cert=None, key=None, token=None):
        self.node, self.cache, self.token = node, cache, token
        self.tls = bool(cert)
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self):  # noqa: N802 - the http.server interface
                if server.tls and not server.authenticated(self.headers.get("Authorization")):
                    return self.reply(401, b"Unauthorized", "text/plain")
                path = self.path.split("?", 1)[0]
                if path == "/pods":
                    return self.reply(200, json.dumps(server.pod_list()).encode(),
                                      "application/json")
                if path == "/healthz":
                    return self.reply(200, b"ok", "text/plain")
                return self.reply(404, b"404 page not found", "text/plain")

            def reply(self, code, body, content_type):
                self.send_response(code)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self.httpd.daemon_threads = True
        if self.tls:
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(cert, key)
            serve_tls(self.httpd, context)
        self.port = self.httpd.server_address[1]

    def authenticated(self, header):
        scheme, _, token = (header or "").partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            return False
        return self.token is None or token.strip() == self.token

    def pod_list(self):
        """The pods bound to this node that the kubelet knows, with the status it wrote."""
        pods = sorted(self.cache.items("pods", lambda p: (p.get("spec") or {}).get(
            "nodeName") == self.node), key=kubeapi.key_of)
        return {"kind": "PodList", "apiVersion": "v1", "metadata": {},
                "items": [dict(pod, apiVersion="v1", kind="Pod") for pod in pods]}

    def start(self):
        threading.Thread(target=self.httpd.serve_forever, name="kubelet-server-" + self.node,
                         daemon=True).start()

    def stop(self):
        self.httpd.shutdown()
        self.httpd.server_close()
