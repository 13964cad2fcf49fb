"""What the official-client tests of the test API server share: starting the server,
configuring the official Kubernetes Python client for it, a base test case with the
server and the client's APIs, a pod to create, and throwaway certificates made by the
openssl CLI."""

import base64
import os
import select
import subprocess
import time
import unittest

from kubernetes import client

HERE = os.path.dirname(os.path.abspath(__file__))
TOKEN = "official-client-token"


def start_server():
    proc = subprocess.Popen(["/usr/bin/python3", os.path.join(HERE, "apiserver.py"),
                             "--port", "0", "--token", TOKEN, "--bookmark-interval", "0.2"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    deadline = time.monotonic() + 10
    line = b""
    while not line.endswith(b"\n"):
        ready, _, _ = select.select([proc.stdout], [], [], max(0, deadline - time.monotonic()))
        if not ready:
            proc.kill()
            raise RuntimeError("test API server printed no ready line within 10 s")
        byte = os.read(proc.stdout.fileno(), 1)
        if not byte:
            raise RuntimeError("test API server exited before it was ready")
        line += byte
    assert line.startswith(b"ready port="), line
    return proc, int(line.split(b"=")[1])


def pod(name, labels=None, scheduler="gleaner"):
    return client.V1Pod(
        metadata=client.V1ObjectMeta(name=name, labels=labels or {}),
        spec=client.V1PodSpec(scheduler_name=scheduler, containers=[client.V1Container(
            name="main", image="busybox", resources=client.V1ResourceRequirements(
                requests={"cpu": "500m", "memory": "1Gi"}, limits={"cpu": "500m",
                                                                   "memory": "1Gi"}))]))


def make_certificate(directory, stem, names):
    """A self-signed certificate (its own CA) for `names`: (cert path, key path, caBundle)."""
    cert, key = os.path.join(directory, stem + ".crt"), os.path.join(directory, stem + ".key")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                    "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", key, "-out", cert,
                    "-days", "1", "-subj", "/CN=" + stem, "-addext",
                    "subjectAltName=" + ",".join(names)],
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    with open(cert, "rb") as f:
        return cert, key, base64.b64encode(f.read()).decode()


def api_client(port):
    """The official client, configured for the test server on `port` with its token."""
    config = client.Configuration(host="http://127.0.0.1:%d" % port)
    config.api_key = {"authorization": TOKEN}
    config.api_key_prefix = {"authorization": "Bearer"}
    return client.ApiClient(config)


class ServerTestCase(unittest.TestCase):
    """A test API server for the test class, and the official client's APIs on it."""

    @classmethod
    def setUpClass(cls):
        cls.proc, port = start_server()
        cls.port = port
        cls.api = api_client(port)
        cls.core = client.CoreV1Api(cls.api)
        cls.custom = client.CustomObjectsApi(cls.api)
        cls.admission = client.AdmissionregistrationV1Api(cls.api)
        cls.scheduling = client.SchedulingV1Api(cls.api)

    @classmethod
    def tearDownClass(cls):
        cls.proc.stdin.close()
        cls.proc.kill()
        cls.proc.wait()
        cls.proc.stdout.close()
        cls.api.close()
