#!/usr/bin/python3
"""A container's process on a real emulated node (podruntime.py starts it inside its
container cgroup).

Usage: workload.py ls-service [--port N] [--work-ms MS] [--ignore-sigterm]
       workload.py executor [--ignore-sigterm]
       workload.py idle [--ignore-sigterm]

  ls-service  an online service: HTTP on 127.0.0.1:PORT (0: any free port); each GET
              spins the CPU for --work-ms before answering 200 with the time spent.
  executor    a Spark executor: each stdin line "task SECONDS [BYTES]" runs one task, in
              the order given: the CPU spins for SECONDS of wall time while BYTES of memory
              are held and touched page by page. On SIGPWR (Spark's decommissioning signal)
              it takes no new task, finishes those it has and exits 0.
  idle        does nothing (a driver JVM waiting on its executors, a sidecar).
Every kind exits when its stdin closes (the kubelet that started it went away), and on
SIGTERM unless --ignore-sigterm (then only SIGKILL, after the grace period, stops it)."""

import argparse
import http.server
import os
import queue
import signal
import sys
import threading
import time

PAGE = 4096


def spin(seconds, memory=0):
    held = bytearray(memory)  # zero-filled by the allocator: touched below, page by page
    end = time.monotonic() + seconds
    offset = 0
    while time.monotonic() < end:
        if held:
            held[offset] = (held[offset] + 1) & 0xFF
            offset = (offset + PAGE) % len(held)
        for _ in range(2000):
            pass


def ls_service(port, work_ms):
    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 - the http.server interface
            start = time.monotonic()
            spin(work_ms / 1000.0)
            body = ("%.6f\n" % (time.monotonic() - start)).encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", port), Handler)
    print("listening port=%d" % server.server_address[1], flush=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()


def executor(lines):
    tasks = queue.Queue()
    # SIGPWR (Spark's decom.sh, run by the pod's preStop hook): decommissioning, as
    # CoarseGrainedExecutorBackend.decommissionSelf does it: no new task, the ones handed
    # before it finished, then exit 0.
    decommissioning = threading.Event()
    signal.signal(signal.SIGPWR, lambda signum, frame: decommissioning.set())

    def run():
        while True:
            try:
                seconds, memory = tasks.get(timeout=0.05)
            except queue.Empty:
                if decommissioning.is_set():
                    print("Finished decommissioning", flush=True)
                    os._exit(0)
                continue
            spin(seconds, memory)

    threading.Thread(target=run, daemon=True).start()
    for line in lines:
        words = line.split()
        if decommissioning.is_set():
            continue  # the driver, told of the decommissioning, sends no more
        if len(words) >= 2 and words[0] == "task":
            try:
                tasks.put((float(words[1]), int(words[2]) if len(words) > 2 else 0))
            except ValueError:
                print("bad task line: %r" % line, file=sys.stderr, flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("kind", choices=("ls-service", "executor", "idle"))
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--work-ms", type=float, default=1.0)
    parser.add_argument("--ignore-sigterm", action="store_true")
    args = parser.parse_args()
    if args.ignore_sigterm:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    if args.kind == "ls-service":
        ls_service(args.port, args.work_ms)
    if args.kind == "executor":
        executor(sys.stdin)
    else:
        sys.stdin.read()
    os._exit(0)


if __name__ == "__main__":
    main()
