"""The demo's latency-sensitive "web" service: an HTTP/1.1 keep-alive server (stdlib only)
that does a fixed amount of CPU work per request, so its latency shows CPU contention.

usage: web_server.py --port N [--work N] [--tag RUN_DIR]
"""
import argparse
import http.server
import socketserver


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as wrk expects
    # Headers and body go out as separate writes; with Nagle on, the body waits for the
    # client's delayed ACK (~40 ms), which would swamp the latency this demo measures.
    disable_nagle_algorithm = True
    work = 25000

    def do_GET(self):
        acc = 0
        for i in range(self.work):  # the per-request CPU work
            acc += i * i
        body = b"ok %d\n" % (acc & 0xFFFF)
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):  # no per-request log lines
        pass


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 256

    def handle_error(self, request, client_address):
        pass  # wrk closes its connections mid-request when a load step ends


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--work", type=int, default=25000)
    parser.add_argument("--tag", default="")  # the demo's run dir, so leftovers are findable
    args = parser.parse_args()
    Handler.work = args.work
    Server(("127.0.0.1", args.port), Handler).serve_forever()


if __name__ == "__main__":
    main()
