"""An HTTPS admission webhook run in the test process, for the mutating-admission tests
of the test API server; the AdmissionReview answers it gives; a loopback port nothing
listens on, for a webhook that cannot be reached."""

import base64
import http.server
import json
import socket
import ssl
import threading
import urllib.parse

from tls_server import serve_tls


def review_answer(review, allowed=True, patch=None, status=None, warnings=None, uid=None):
    response = {"uid": review["request"]["uid"] if uid is None else uid, "allowed": allowed}
    if patch is not None:
        response["patch"] = base64.b64encode(json.dumps(patch).encode()).decode()
        response["patchType"] = "JSONPatch"
    if status is not None:
        response["status"] = status
    if warnings:
        response["warnings"] = warnings
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": response}


class WebhookServer:
    """An HTTPS admission webhook: `behaviours[path](review)` answers the review sent to
    path; every review received is kept in `received` as (path, query, review)."""

    def __init__(self, cert, key):
        self.behaviours, self.received, self.lock = {}, [], threading.Lock()
        self.release = threading.Event()  # ends the waits of deliberately slow answers
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, fmt, *args):
                pass

            def do_POST(self):
                url = urllib.parse.urlsplit(self.path)
                review = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                with outer.lock:
                    outer.received.append((url.path, url.query, review))
                answer = outer.behaviours[url.path](review)
                data = answer if isinstance(answer, bytes) else json.dumps(answer).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        class Server(http.server.ThreadingHTTPServer):
            def handle_error(self, request, client_address):
                pass  # the API server hangs up on answers that come too late, as it should

        self.httpd = Server(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(cert, key)
        serve_tls(self.httpd, context)
        self.port = self.httpd.server_address[1]
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def reviews(self, path):
        with self.lock:
            return [r for p, _, r in self.received if p == path]

    def stop(self):
        self.release.set()
        self.httpd.shutdown()
        self.httpd.server_close()


def closed_port():
    """A loopback port nothing listens on."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
