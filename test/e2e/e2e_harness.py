"""Plumbing the end-to-end tests share: child processes whose output is kept and
searched (Proc), a pod watch recorder, HTTPS to a Service's DNS name on a local port,
manifest loading, deadline loops and the --bin-dir entry point."""

import copy
import http.client
import json
import os
import re
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time
import unittest

import yaml
from kubernetes.watch.watch import iter_resp_lines


def cpu_milli(text):
    """A cpu quantity ("7500m", "1", "0.5") in millicores."""
    return int(text[:-1]) if text.endswith("m") else int(float(text) * 1000)


def load_yaml(path):
    with open(path) as f:
        return [d for d in yaml.safe_load_all(f) if d]


def find_doc(docs, kind, name=None):
    found = [d for d in docs if d.get("kind") == kind and
             (name is None or d["metadata"]["name"] == name)]
    assert len(found) == 1, "expected one %s %s, found %d" % (kind, name or "", len(found))
    return copy.deepcopy(found[0])


def run_with_bin_dir(module_globals, *binaries):
    """The tests' entry point: --bin-dir BUILD/bin into the module's BIN_DIR, exit 77 (a
    skip for ctest) when a binary is missing, then unittest with the other arguments."""
    import argparse
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin-dir", required=True)
    args, rest = ap.parse_known_args()
    module_globals["BIN_DIR"] = args.bin_dir
    for b in binaries:
        if not os.access(os.path.join(args.bin_dir, b), os.X_OK):
            print("SKIP: no %s in %s" % (b, args.bin_dir))
            sys.exit(77)
    unittest.main(argv=[sys.argv[0]] + rest)


def deadline_loop(timeout, interval=0.05):
    """Yields until `timeout` seconds passed; the caller breaks out when its condition holds."""
    end = time.monotonic() + timeout
    while True:
        yield
        if time.monotonic() >= end:
            return
        time.sleep(interval)  # the poll interval of a deadline wait, not a wait by itself


class ServiceHTTPS(http.client.HTTPSConnection):
    """HTTPS to 127.0.0.1:port, verified as the Service's DNS name (the name agents dial)."""

    def __init__(self, port, server_name, cafile):
        super().__init__("127.0.0.1", port, timeout=10,
                         context=ssl.create_default_context(cafile=cafile))
        self.server_name = server_name

    def connect(self):
        sock = socket.create_connection((self.host, self.port), self.timeout)
        self.sock = self._context.wrap_socket(sock, server_hostname=self.server_name)


def openssl(*args):
    subprocess.run(["openssl"] + list(args), check=True, capture_output=True, timeout=60)


def make_certificates(d):
    """A CA and a serving certificate for "localhost" it signed: (ca.crt, tls dir)."""
    tls = os.path.join(d, "tls")
    os.makedirs(tls)
    ca_key, ca_crt = os.path.join(d, "ca.key"), os.path.join(d, "ca.crt")
    openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
            "-nodes", "-days", "1", "-subj", "/CN=test-ca", "-keyout", ca_key, "-out", ca_crt)
    key, csr = os.path.join(tls, "tls.key"), os.path.join(d, "tls.csr")
    openssl("req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
            "-nodes", "-subj", "/CN=localhost", "-keyout", key, "-out", csr)
    ext = os.path.join(d, "ext.cnf")
    with open(ext, "w") as f:
        f.write("subjectAltName=DNS:localhost\nextendedKeyUsage=serverAuth\n")
    openssl("x509", "-req", "-in", csr, "-CA", ca_crt, "-CAkey", ca_key, "-CAcreateserial",
            "-days", "1", "-extfile", ext, "-out", os.path.join(tls, "tls.crt"))
    return ca_crt, tls


def node_report(node, seq, epoch, batch_cpu_milli, batch_memory, cluster="",
                capacity=(8000, 32 << 30)):
    """A NodeReport (docs/wire-format.md) of an idle node with this batch allocatable."""
    amounts = {"cpuMillicores": capacity[0], "memoryBytes": capacity[1]}
    return {"version": 1, "node": node, "cluster": cluster, "sequence": seq, "epoch": epoch,
            "timestampUnixMillis": int(time.time() * 1000),
            "capacity": amounts, "allocatable": dict(amounts),
            "batchAllocatable": {"cpuMillicores": batch_cpu_milli, "memoryBytes": batch_memory},
            "batchUnavailableReason": None,
            "usage": {k: {"cpuMillicores": 0, "memoryBytes": 0}
                      for k in ("node", "system", "ls", "be")},
            "bePods": [], "suppress": {"active": False, "policy": "none",
                                       "beCpuLimitMillicores": 0},
            "interference": {"lsPods": []}}


def write_kubeconfig(path, server, token=""):
    """A kubeconfig for `server` (an http:// test API server), with a bearer token if given."""
    user = "{token: %s}" % token if token else "{}"
    with open(path, "w") as f:
        f.write("apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: %s}}]\n"
                "users: [{name: u, user: %s}]\ncontexts: [{name: x, context: {cluster: c, "
                "user: u}}]\ncurrent-context: x\n" % (server, user))
    return path


class ProcTestCase(unittest.TestCase):
    """A test that runs child processes (self.start) in a temporary directory (self.tmp):
    stopped in reverse order after the test, their output printed when it failed."""

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory(prefix="gleaner-e2e-")
        self.procs = []

    def start(self, name, argv, stdin=False, dump_signal=None):
        p = Proc(name, argv, self.tmp.name, stdin=stdin, dump_signal=dump_signal)
        self.procs.append(p)
        return p

    def tearDown(self):
        for p in reversed(getattr(self, "procs", [])):
            p.stop()
        if hasattr(self, "_outcome") and any(
                e for _, e in getattr(self._outcome, "errors", []) if e):
            for p in self.procs:
                print("---- %s\n%s" % (p.name, p.text()[-3000:]))
        if hasattr(self, "tmp"):
            self.tmp.cleanup()


class Proc:
    """A child process whose output (stdout and stderr together) is kept in a log file and
    in memory, so the test can wait for a line and print everything on failure."""

    def __init__(self, name, argv, log_dir, stdin=False, dump_signal=None):
        self.name = name
        # The signal on which the process prints every thread's stack (faulthandler), sent
        # before SIGKILL when it outlives stop()'s grace: its log then says where it waited.
        self.dump_signal = dump_signal
        self.log_path = os.path.join(log_dir, name + ".log")
        self.lines = []
        self.lock = threading.Lock()
        self.log = open(self.log_path, "w")
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE if stdin else subprocess.DEVNULL,
                                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        for raw in iter(self.proc.stdout.readline, b""):
            line = raw.decode(errors="replace").rstrip("\n")
            with self.lock:
                self.lines.append(line)
                self.log.write(line + "\n")
                self.log.flush()

    def wait_line(self, pattern, timeout):
        """The first match of `pattern` in the output, waiting up to `timeout` seconds."""
        regex = re.compile(pattern)
        for _ in deadline_loop(timeout, 0.02):
            with self.lock:
                for line in self.lines:
                    m = regex.search(line)
                    if m:
                        return m
            if self.proc.poll() is not None and not self.reader.is_alive():
                break
        raise AssertionError("%s: no line matching %r within %.0fs (exit code %s); output:\n%s"
                             % (self.name, pattern, timeout, self.proc.poll(), self.text()))

    def note(self, text):
        """A line of the test's own in this process's log, told apart by its prefix."""
        with self.lock:
            self.lines.append("[e2e] " + text)
            self.log.write("[e2e] %s\n" % text)
            self.log.flush()

    def text(self):
        with self.lock:
            return "\n".join(self.lines)

    def stop(self, grace_s=5):
        """SIGTERM (and closing stdin, which the API server and emulator also take as the
        end), then, if it lingers past `grace_s`, its stacks (dump_signal) and SIGKILL; only
        this process, by its pid."""
        if self.proc.poll() is None:
            try:
                if self.proc.stdin:
                    self.proc.stdin.close()
            except OSError:
                pass
            self.proc.terminate()
            try:
                self.proc.wait(grace_s)
            except subprocess.TimeoutExpired:
                self.note("still running %.0f s after SIGTERM; SIGKILL" % grace_s)
                if self.dump_signal:
                    self.proc.send_signal(self.dump_signal)
                    try:
                        self.proc.wait(2)  # the time to print its stacks, then SIGKILL
                    except subprocess.TimeoutExpired:
                        pass
                self.proc.kill()
                self.proc.wait(5)
        elif self.proc.stdin:
            self.proc.stdin.close()
        self.reader.join(2)
        self.proc.stdout.close()
        self.log.close()


class PodRecorder(threading.Thread):
    """Every pod watch event the API server sends, in order: a failed executor's Failed
    phase lasts ~100 ms before Spark deletes it, faster than polling would see."""

    def __init__(self, core):
        super().__init__(daemon=True)
        self.core, self.lock, self.events, self.times = core, threading.Lock(), [], []
        self.stopping = threading.Event()
        self.rv = json.loads(core.list_pod_for_all_namespaces(
            _preload_content=False).data)["metadata"]["resourceVersion"]

    def run(self):
        while not self.stopping.is_set():
            resp = None
            try:
                resp = self.core.list_pod_for_all_namespaces(
                    watch=True, resource_version=self.rv, allow_watch_bookmarks=True,
                    timeout_seconds=60, _preload_content=False)
                for line in iter_resp_lines(resp):
                    event = json.loads(line)
                    self.rv = event["object"]["metadata"]["resourceVersion"]
                    if event["type"] in ("ADDED", "MODIFIED", "DELETED"):
                        with self.lock:
                            self.events.append((event["type"], event["object"]))
                            self.times.append(time.monotonic())
            except Exception:  # noqa: BLE001 - the server going away at the end
                if self.stopping.wait(0.1):
                    return
            finally:
                if resp is not None:
                    resp.close()

    def seen(self, ns, predicate=lambda etype, pod: True, times=False):
        """(type, pod) of the matching events, or with `times` (type, pod, when received)."""
        with self.lock:
            return [((t, p, at) if times else (t, p)) for (t, p), at in zip(self.events, self.times)
                    if p["metadata"].get("namespace") == ns and predicate(t, p)]
