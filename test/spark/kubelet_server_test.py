"""The emulator's kubelet API over HTTPS (kubelet_server.py): a client that connects and
sends nothing (no TLS ClientHello) holds up neither another client's GET /pods nor the
server's stop, as with kubelet's Go server, which handshakes each connection on its own.
The handshake used to run inside accept(), in the thread serving the listener: one such
client stalled every other request and the emulator's stop (an e2e run's emulator was
SIGKILLed, still stopping, 5 s after SIGTERM)."""
import json
import os
import socket
import ssl
import sys
import tempfile
import threading
import time
import unittest
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "e2e"))
from e2e_harness import make_certificates  # noqa: E402
from kubelet_server import KubeletServer  # noqa: E402

TOKEN = "kubelet-test-token"
# Far above what a GET or a stop takes here, far below the 10 s a stalled handshake is given.
BOUND_S = 5.0


class NoPods:
    def items(self, kind, keep):
        return []


class StalledClient(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory(prefix="gleaner-kubelet-server-")
        self.ca, tls = make_certificates(self.tmp.name)
        self.server = KubeletServer("n1", NoPods(), 0, os.path.join(tls, "tls.crt"),
                                    os.path.join(tls, "tls.key"), TOKEN)
        self.server.start()
        self.stopped = False
        # Connected, and silent: no ClientHello.
        self.stalled = socket.create_connection(("127.0.0.1", self.server.port))

    def tearDown(self):
        self.stalled.close()
        if not self.stopped:
            self.server.stop()
        self.tmp.cleanup()

    def get_pods(self):
        context = ssl.create_default_context(cafile=self.ca)
        request = urllib.request.Request("https://localhost:%d/pods" % self.server.port,
                                         headers={"Authorization": "Bearer " + TOKEN})
        with urllib.request.urlopen(request, timeout=BOUND_S, context=context) as r:
            return json.load(r)

    def test_another_client_is_answered(self):
        self.assertEqual(self.get_pods()["kind"], "PodList")

    def test_the_server_stops(self):
        done = threading.Event()

        def stop():
            self.server.stop()
            done.set()

        threading.Thread(target=stop, daemon=True).start()
        began = time.monotonic()
        self.assertTrue(done.wait(BOUND_S), "stop() still blocked after %.0f s by a client "
                        "that sent nothing" % (time.monotonic() - began))
        self.stopped = True


if __name__ == "__main__":
    unittest.main()
