#!/usr/bin/python3
"""A stand-in for spark-operator 2.x (kubeflow/spark-operator, as its 2.4/2.5 releases
behave) with Spark 3.5 on Kubernetes and the kubelets of some nodes, for tests against an
API server (test/apiserver/apiserver.py or a real one). It talks REST through the official
Python client.

Usage: spark_emulator.py --server http://127.0.0.1:PORT [--namespace NS] [--nodes n1,n2]
           [--token T] [--insecure] [--driver-pod-creation-grace-period 10]
           [--real-nodes n1 [--cgroup-root /sys/fs/cgroup] [--kubelet-port 0]
            [--kubelet-tls-cert F --kubelet-tls-key F [--kubelet-token T]]
            [--workload-log-dir D]]
           [--exit-on-stdin-eof] [--verbose]
Prints "kubelet node=NAME port=PORT" for each real node, then "ready" once its watches
(pods, nodes, SparkApplications) are established, and runs until SIGTERM (or, with
--exit-on-stdin-eof, until its stdin closes).

What runs inside, each as its own thread:
  operator  the SparkApplication controller: NEW -> SUBMITTED -> RUNNING -> SUCCEEDING ->
            COMPLETED (or FAILING -> FAILED, SUBMISSION_FAILED, PENDING_RERUN, INVALIDATING,
            SUSPENDING/SUSPENDED/RESUMING), status written through the status subresource
            (PUT, retried on conflict). Its submission is spark-submit in cluster mode: the
            driver pod <app>-driver built from the pod template then Spark's settings, as the
            operator's pod webhook leaves it. A refused create (4xx, or 5xx/429 after the
            fabric8 client's 10 retries) makes the app SUBMISSION_FAILED; restartPolicy
            decides about retries (OnFailure + onSubmissionFailureRetries, linear backoff).
  drivers   one per driver pod once it runs: executors <prefix>-exec-<id> (the prefix is
            spark.app.name plus a random id), in batches of spark.kubernetes.allocation.batch.size
            (5) every spark.kubernetes.allocation.batch.delay (1s), waiting for each batch
            to be seen before the next; ids are never reused; failed executors are deleted
            and replaced; pending ones are left pending; dynamic allocation follows the
            scripted demand; at the end every executor is deleted and the driver exits.
  kubelet   for pods bound to --nodes (default: every Node): admission against
            status.allocatable (Failed, reason OutOf<resource>, "Pod was rejected: Node
            didn't have enough resource: ..."), else Running, counting the pods of every
            namespace. It holds each node's Lease in kube-node-lease, and a deleted pod
            (marked by the API server, deletionTimestamp) is deleted again with grace 0
            and its UID once its processes have stopped, as kubelet finishes a
            deletion; only then is it gone. Exits of the emulated processes (scripted executor failures,
            executors asked to exit, the driver at the end) become terminated container
            states and Succeeded/Failed pods, whichever node the pod is on.
  real      for --real-nodes: each pod gets kubelet's cgroups under --cgroup-root
            (kubepods/{burstable,besteffort}/pod<uid>/<container id>, cgroupfs driver, v1
            or v2; shares from requests, CFS quota and memory limit from limits) and each
            container a real process inside its cgroup (workload.py: an HTTP service on
            its hostPort, a Spark executor spinning the CPU for the tasks its driver hands
            it, or an idle driver/sidecar); deletion, eviction and the pod's end stop them
            (SIGTERM, SIGKILL after the grace period) and remove the pod's cgroups; a
            process that dies on its own ends its pod (137 after an OOM kill: OOMKilled).
            The node's kubelet API (GET /pods, /healthz) is served on --kubelet-port.
  gc        cascading deletion through ownerReferences (app -> driver -> executors), and
            of a pod created after its owner went.
  decom     with spark.decommission.enabled, executor pods get Spark's preStop hook
            (spark.kubernetes.decommission.script, /opt/decom.sh); a deleted or evicted
            executor then decommissions: it takes no new task, finishes the running one,
            migrates its blocks (spark.storage.decommission.enabled; emulated nodes) and
            exits 0 ("Finished decommissioning"; on a real node its process gets SIGPWR),
            unless its grace period ends first (SIGKILL, 137). An executor that goes mid-task otherwise loses that task's work
            ("lost mid-task" in the driver's log, with the seconds lost).

Scripting, for tests only: annotations on the SparkApplication, read when its driver starts.
  spark-emulator.gleaner.io/run-seconds       the job's running time (float seconds); absent:
                                              the application runs until deleted
  spark-emulator.gleaner.io/run-from          when that time starts: first-executor (default,
                                              the first executor running), all-executors (as
                                              many running as the current target) or driver
  spark-emulator.gleaner.io/driver-exit-code  the driver's exit code at the end (default 0;
                                              non-zero: driver pod Failed, app FAILED)
  spark-emulator.gleaner.io/fail-executors    "ID@SECONDS[:CODE],...": executor ID exits with
                                              CODE (default 1; 137 reads OOMKilled) SECONDS
                                              after it started running
  spark-emulator.gleaner.io/demand            "SECONDS:N,...": with dynamic allocation, the
                                              executors the pending tasks need from SECONDS
                                              after the driver started (before the first
                                              entry the target stays the initial one)
  spark-emulator.gleaner.io/seed              an integer: app ids, submission ids and name
                                              prefixes repeat run to run
  spark-emulator.gleaner.io/task-seconds      each busy executor gets a task this long
                                              (default 0.5) every as long (on a real node
                                              its process works it)
  spark-emulator.gleaner.io/task-memory       bytes each task holds and touches (default 0)
  spark-emulator.gleaner.io/migrate-seconds   a decommissioning executor's block migration
                                              (default 0.2; with spark.storage.decommission.
                                              enabled)
To be fast, set Spark's own timings in spec.sparkConf, e.g.
  spark.kubernetes.allocation.batch.delay: "100ms"
  spark.kubernetes.executor.eventProcessingInterval: "100ms"  (failed executors deleted)
  spark.dynamicAllocation.executorIdleTimeout: "300ms"        (integers with a unit only)
  spark.dynamicAllocation.schedulerBacklogTimeout: "100ms"
  spark.kubernetes.dynamicAllocation.deleteGracePeriod: "1s"

Deliberately not emulated: the driver's Service, ConfigMap and UI Service/Ingress (the pods
still name the ConfigMap volumes), events of the operator, batch schedulers (Volcano,
YuniKorn, Kueue), PodDisruptionBudgets, Prometheus, the REST submitter, executor
registration over RPC (a running pod is a registered executor), shuffle tracking (an
executor without tasks is idle), the polling snapshot source, the SparkApplication
defaulting webhook's write (defaults apply when read). A Node without "pods" in allocatable counts as the default 110.
"""

import argparse
import faulthandler
import os
import signal
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import kubeapi  # noqa: E402
from garbage_collector import GarbageCollector  # noqa: E402
from kubelet import Kubelet  # noqa: E402
from kubelet_server import KubeletServer  # noqa: E402
from sparkruntime import SparkRuntime  # noqa: E402
from sparkoperator import Operator  # noqa: E402
from stop_signal import StopSignal  # noqa: E402


class Emulator:
    def __init__(self, server, namespace=None, nodes=None, token=None, insecure=False,
                 grace_period=10.0, gc=True, real_nodes=(), cgroup_root="/sys/fs/cgroup",
                 kubelet_port=0, tls=None, kubelet_token=None, workload_log_dir=None):
        """real_nodes: the nodes whose pods run as real processes in cgroups under
        cgroup_root; each serves its kubelet API on kubelet_port (0: any free port), over
        HTTPS when tls is (cert file, key file)."""
        self.api = kubeapi.Api(server, token, insecure)
        self.cache = kubeapi.Cache()
        self.stop_event = threading.Event()
        self.kubelet = Kubelet(self.api, self.cache, nodes)
        self.servers = []
        try:
            for name in real_nodes:
                self.kubelet.add_real_node(name, cgroup_root, workload_log_dir)
                self.servers.append(KubeletServer(name, self.cache, kubelet_port,
                                                  *(tls or (None, None)), kubelet_token))
        except BaseException:
            self.kubelet.stop_real_nodes()
            raise
        self.runtime = SparkRuntime(self.api, self.cache, self.kubelet, namespace)
        self.operator = Operator(self.api, self.cache, self.runtime, namespace, grace_period)
        self.actors = [self.kubelet, self.operator]
        if gc:
            self.actors.append(GarbageCollector(self.api, self.cache))
        self.informers = [kubeapi.Informer(self.api, self.cache, kind, ns, self.stop_event)
                          # a kubelet sees every pod on its nodes, whatever the namespace
                          for kind, ns in (("nodes", None), ("pods", None),
                                           ("sparkapplications", namespace))]

    def start(self, timeout=30.0):
        for actor in self.actors:
            actor.start()
        for server in self.servers:
            server.start()
        for informer in self.informers:
            informer.start()
        for informer in self.informers:
            if not informer.established.wait(timeout):
                raise RuntimeError("the %s watch was not established within %.0fs"
                                   % (informer.kind, timeout))

    def stop(self):
        self.stop_event.set()
        for actor in self.actors:
            actor.stop()
        for server in self.servers:
            server.stop()
        self.kubelet.stop_real_nodes()


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--server", required=True, help="API server URL, http:// or https://")
    parser.add_argument("--namespace", default=None, help="only this namespace (default all)")
    parser.add_argument("--nodes", default=None,
                        help="comma-separated nodes whose kubelet this is (default every Node)")
    parser.add_argument("--token", default=None, help="bearer token for the API server")
    parser.add_argument("--insecure", action="store_true", help="skip TLS verification")
    parser.add_argument("--driver-pod-creation-grace-period", type=float, default=10.0)
    parser.add_argument("--no-gc", action="store_true", help="no cascading deletion")
    parser.add_argument("--real-nodes", default="",
                        help="comma-separated nodes whose pods run as real processes in cgroups")
    parser.add_argument("--cgroup-root", default="/sys/fs/cgroup",
                        help="where the real nodes' kubepods tree goes (a cgroup root)")
    parser.add_argument("--kubelet-port", type=int, default=0,
                        help="the real nodes' kubelet API port (0: any free port)")
    parser.add_argument("--kubelet-tls-cert", default=None, help="serve the kubelet API "
                        "over HTTPS with this certificate (and --kubelet-tls-key)")
    parser.add_argument("--kubelet-tls-key", default=None)
    parser.add_argument("--kubelet-token", default=None,
                        help="the bearer token the HTTPS kubelet API accepts (default: any)")
    parser.add_argument("--workload-log-dir", default=None,
                        help="where the real containers' output goes (default: discarded)")
    parser.add_argument("--exit-on-stdin-eof", action="store_true",
                        help="exit when stdin closes (the test that started us went away)")
    parser.add_argument("--verbose", action="store_true", help="log to stderr")
    args = parser.parse_args()
    kubeapi.VERBOSE = args.verbose
    nodes = [n for n in (args.nodes or "").split(",") if n] or None
    if bool(args.kubelet_tls_cert) != bool(args.kubelet_tls_key):
        parser.error("--kubelet-tls-cert and --kubelet-tls-key go together")
    tls = (args.kubelet_tls_cert, args.kubelet_tls_key) if args.kubelet_tls_cert else None
    try:
        emulator = Emulator(args.server, args.namespace, nodes, args.token, args.insecure,
                            args.driver_pod_creation_grace_period, not args.no_gc,
                            [n for n in args.real_nodes.split(",") if n], args.cgroup_root,
                            args.kubelet_port, tls, args.kubelet_token, args.workload_log_dir)
    except (OSError, ValueError) as e:
        sys.exit("spark_emulator.py: the real nodes cannot run: %s" % e)
    # SIGUSR1 prints every thread's stack: a test that finds the emulator still running
    # long after SIGTERM sends it before SIGKILL (test/e2e/e2e_harness.py Proc.stop).
    faulthandler.register(signal.SIGUSR1, all_threads=True)
    stop = StopSignal(sys.stdin if args.exit_on_stdin_eof else None)
    emulator.start()
    for server in emulator.servers:
        print("kubelet node=%s port=%d" % (server.node, server.port), flush=True)
    print("ready", flush=True)
    stop.wait()
    stopping = time.monotonic()
    kubeapi.log("emulator", "stopping: its pods killed, its nodes' kubepods trees removed")
    emulator.stop()
    kubeapi.log("emulator", "stopped in %.2f s", time.monotonic() - stopping)
    sys.stdout.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
