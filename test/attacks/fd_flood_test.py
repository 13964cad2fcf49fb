#!/usr/bin/python3
"""Idle connections beyond the process's file descriptors (an attack needing no token):
gleaner-scheduler, run with a 64-descriptor limit, must neither spin on accept() nor flood
its log, and must answer again once the connections go. Loopback only, bounded.

Usage: fd_flood_test.py --bin-dir BUILD/bin   (exit 77: binary missing)"""

import os
import socket
import subprocess
import sys
import tempfile
import unittest
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e"))
from e2e_harness import Proc, deadline_loop, run_with_bin_dir  # noqa: E402

BIN_DIR = None
FD_LIMIT = 64
FLOOD = 200


def cpu_seconds(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class FdFloodTest(unittest.TestCase):
    def setUp(self):
        binary = os.path.join(BIN_DIR, "gleaner-scheduler")  # run_with_bin_dir saw it
        self.tmp = tempfile.TemporaryDirectory(prefix="gleaner-fd-flood-")
        # prlimit (util-linux): the scheduler alone gets the small descriptor limit.
        self.sched = Proc("scheduler", ["prlimit", "--nofile=%d:%d" % (FD_LIMIT, FD_LIMIT),
                                        binary, "run", "--listen", "127.0.0.1:0"],
                          self.tmp.name)
        self.port = int(self.sched.wait_line(r"listening on port (\d+)", 20).group(1))
        self.sockets = []

    def tearDown(self):
        for s in getattr(self, "sockets", []):
            s.close()
        if hasattr(self, "sched"):
            self.sched.stop()
            self.tmp.cleanup()

    def healthz(self):
        with urllib.request.urlopen("http://127.0.0.1:%d/healthz" % self.port, timeout=5) as r:
            return r.status

    def metric(self, name):
        with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % self.port, timeout=5) as r:
            for line in r.read().decode().splitlines():
                if line.startswith(name + " "):
                    return float(line.split()[1])
        self.fail("no metric " + name)

    def test_idle_connections_past_the_descriptor_limit(self):
        self.assertEqual(self.healthz(), 200)
        self.assertEqual(self.metric("gleaner_scheduler_http_connection_cap_reached_total"), 0)
        # Half the descriptor limit, never more.
        self.assertEqual(self.metric("gleaner_scheduler_http_connection_limit"), FD_LIMIT // 2)
        for _ in range(FLOOD):
            self.sockets.append(socket.create_connection(("127.0.0.1", self.port), timeout=5))
        # 200 connections against 64 descriptors: the connection cap (half the limit) keeps
        # the rest in the backlog, and accept() failures, if any, back off. Two seconds in
        # which the scheduler must neither die nor spin nor flood its log.
        start_cpu = cpu_seconds(self.sched.proc.pid)
        with self.assertRaises(subprocess.TimeoutExpired, msg="the scheduler died"):
            self.sched.proc.wait(2)
        used = cpu_seconds(self.sched.proc.pid) - start_cpu
        accept_lines = self.sched.text().count("accept failed")
        self.assertLessEqual(accept_lines, 2, "accept failures flood the log: " +
                             self.sched.text()[-3000:])
        # Spinning on accept() burns a whole core; backing off uses almost nothing.
        self.assertLess(used, 0.5, "%.2f s of CPU in 2 s with the descriptors exhausted" % used)
        for s in self.sockets:
            s.close()
        self.sockets = []
        for _ in deadline_loop(30):
            try:
                if self.healthz() == 200:
                    break
            except OSError:
                pass
        else:
            self.fail("no answer after the connections closed")
        # The flood is on record: the cap was reached, and the connections are gone.
        self.assertGreaterEqual(
            self.metric("gleaner_scheduler_http_connection_cap_reached_total"), 1)
        self.assertLessEqual(self.metric("gleaner_scheduler_http_connections"), 2)


if __name__ == "__main__":
    run_with_bin_dir(globals(), "gleaner-scheduler")
