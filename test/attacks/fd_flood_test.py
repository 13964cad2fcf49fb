#!/usr/bin/python3
"""Idle connections beyond the process's file descriptors (an attack needing no token):
gleaner-scheduler, run with a 64-descriptor limit, must neither spin on accept() nor flood
its log, and must answer again once the connections go. Loopback only, bounded.

Usage: fd_flood_test.py --bin-dir BUILD/bin   (exit 77: binary missing)"""

import argparse
import os
import re
import resource
import socket
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.request

BIN_DIR = None
FD_LIMIT = 64
FLOOD = 200


def cpu_seconds(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class FdFloodTest(unittest.TestCase):
    def setUp(self):
        binary = os.path.join(BIN_DIR, "gleaner-scheduler")
        if not os.access(binary, os.X_OK):
            raise unittest.SkipTest("no gleaner-scheduler in " + BIN_DIR)
        self.log = tempfile.NamedTemporaryFile("w+", prefix="gleaner-fd-flood-", suffix=".log")
        self.proc = subprocess.Popen(
            [binary, "run", "--listen", "127.0.0.1:0"], stdout=self.log, stderr=subprocess.STDOUT,
            preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (FD_LIMIT, FD_LIMIT)))
        self.port = None
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and self.port is None:
            self.log.seek(0)
            m = re.search(r"listening on port (\d+)", self.log.read())
            if m:
                self.port = int(m.group(1))
            elif self.proc.poll() is not None:
                break
            else:
                time.sleep(0.02)
        self.assertIsNotNone(self.port, "the scheduler did not start: " + self.logs())
        self.sockets = []

    def tearDown(self):
        for s in getattr(self, "sockets", []):
            s.close()
        if getattr(self, "proc", None) and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    def logs(self):
        self.log.seek(0)
        return self.log.read()[-4000:]

    def healthz(self):
        with urllib.request.urlopen("http://127.0.0.1:%d/healthz" % self.port, timeout=5) as r:
            return r.status

    def test_idle_connections_past_the_descriptor_limit(self):
        self.assertEqual(self.healthz(), 200)
        for _ in range(FLOOD):
            s = socket.create_connection(("127.0.0.1", self.port), timeout=5)
            self.sockets.append(s)
        # Two seconds with every descriptor taken and connections waiting in the backlog.
        start_cpu = cpu_seconds(self.proc.pid)
        time.sleep(2)  # a measurement window, not synchronisation
        used = cpu_seconds(self.proc.pid) - start_cpu
        self.assertIsNone(self.proc.poll(), "the scheduler died: " + self.logs())
        accept_lines = self.logs().count("accept failed")
        self.assertLessEqual(accept_lines, 2, "accept failures flood the log: " + self.logs())
        # Spinning on accept() burns a whole core; backing off uses almost nothing.
        self.assertLess(used, 0.5, "%.2f s of CPU in 2 s with the descriptors exhausted" % used)
        for s in self.sockets:
            s.close()
        self.sockets = []
        deadline = time.monotonic() + 30
        while True:
            try:
                self.assertEqual(self.healthz(), 200)
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin-dir", required=True)
    args, rest = ap.parse_known_args()
    BIN_DIR = args.bin_dir
    if not os.access(os.path.join(BIN_DIR, "gleaner-scheduler"), os.X_OK):
        print("SKIP: no gleaner-scheduler in " + BIN_DIR)
        sys.exit(77)
    unittest.main(argv=[sys.argv[0]] + rest)
