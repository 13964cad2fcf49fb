"""Kubernetes plumbing for the Spark emulator: the official client used with plain JSON
dicts, list+watch informers feeding a shared cache, small single-threaded actors (each
emulated process - operator, kubelet, every Spark driver - is one), and resource
quantities as the API machinery reads them."""

import datetime
import heapq
import itertools
import json
import re
import sys
import threading
import time
from fractions import Fraction

from kubernetes import client
from kubernetes.client.rest import ApiException
from kubernetes.watch.watch import iter_resp_lines

SPARK_GROUP, SPARK_VERSION, SPARK_PLURAL = "sparkoperator.k8s.io", "v1beta2", "sparkapplications"

VERBOSE = False


def log(component, fmt, *args):
    if VERBOSE:
        stamp = time.strftime("%H:%M:%S")
        sys.stderr.write("%s %s: %s\n" % (stamp, component, fmt % args if args else fmt))
        sys.stderr.flush()


def now_rfc3339():
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def key_of(obj):
    meta = obj.get("metadata") or {}
    return (meta.get("namespace"), meta.get("name"))


def labels_of(obj):
    return (obj.get("metadata") or {}).get("labels") or {}


def status_of(error):
    """The v1 Status an ApiException carries (code, reason, message), best effort."""
    try:
        body = json.loads(error.body or "{}")
    except ValueError:
        body = {}
    if not isinstance(body, dict):
        body = {}
    body.setdefault("code", error.status)
    body.setdefault("reason", error.reason or "")
    body.setdefault("message", "")
    return body


# --- quantities -------------------------------------------------------------------
_SUFFIX = {"Ki": 2 ** 10, "Mi": 2 ** 20, "Gi": 2 ** 30, "Ti": 2 ** 40, "Pi": 2 ** 50,
           "Ei": 2 ** 60, "n": Fraction(1, 10 ** 9), "u": Fraction(1, 10 ** 6),
           "m": Fraction(1, 1000), "": 1, "k": 10 ** 3, "M": 10 ** 6, "G": 10 ** 9,
           "T": 10 ** 12, "P": 10 ** 15, "E": 10 ** 18}
_QUANTITY = re.compile(r"^([+-]?[0-9.]+)(([eE][+-]?[0-9]+)|Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E|)$")


def parse_quantity(text):
    """A resource.Quantity string as an exact Fraction of base units."""
    if isinstance(text, (int, float)):
        return Fraction(text)
    m = _QUANTITY.match(str(text).strip())
    if not m or m.group(1) in (".", ""):
        raise ValueError("quantities must match the regular expression "
                         "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$': %r" % text)
    number = Fraction(m.group(1))
    if m.group(3):
        return number * Fraction(10) ** int(m.group(3)[1:])
    return number * _SUFFIX[m.group(2)]


def ceil_fraction(value):
    return -((-value.numerator) // value.denominator)


def quantity_value(name, text):
    """The integer the scheduler and kubelet compare: millicores for cpu (MilliValue),
    rounded-up base units for everything else (Value)."""
    q = parse_quantity(text)
    return ceil_fraction(q * 1000) if name == "cpu" else ceil_fraction(q)


def pod_requests(pod):
    """Effective pod requests (component-helpers resource.PodRequests): per resource the
    larger of the containers' sum and the largest init container, plus spec.overhead.
    A container without a request for a limited resource requests its limit, as the API
    server's defaulting would have set it."""
    spec = pod.get("spec") or {}

    def container_requests(c):
        res = c.get("resources") or {}
        out = dict(res.get("limits") or {})
        out.update(res.get("requests") or {})
        return {k: quantity_value(k, v) for k, v in out.items()}

    total = {}
    for c in spec.get("containers") or []:
        for k, v in container_requests(c).items():
            total[k] = total.get(k, 0) + v
    for c in spec.get("initContainers") or []:
        for k, v in container_requests(c).items():
            total[k] = max(total.get(k, 0), v)
    for k, v in (spec.get("overhead") or {}).items():
        total[k] = total.get(k, 0) + quantity_value(k, v)
    return total


# --- API access -------------------------------------------------------------------
class Api:
    """The official client with a Configuration pointing at --server; answers are parsed
    into plain dicts (field names as on the wire) rather than model objects."""

    def __init__(self, server, token=None, insecure=False):
        config = client.Configuration(host=server)
        config.connection_pool_maxsize = 32
        if token:
            config.api_key = {"authorization": token}
            config.api_key_prefix = {"authorization": "Bearer"}
        if insecure:
            config.verify_ssl = False
        self.client = client.ApiClient(config)
        self.core = client.CoreV1Api(self.client)
        self.custom = client.CustomObjectsApi(self.client)
        self.coordination = client.CoordinationV1Api(self.client)

    @staticmethod
    def _call(fn, *args, **kwargs):
        kwargs.setdefault("_request_timeout", 30)
        resp = fn(*args, _preload_content=False, **kwargs)
        data = resp.data
        return json.loads(data) if data else None

    # pods
    def get_pod(self, ns, name):
        return self._call(self.core.read_namespaced_pod, name, ns)

    def create_pod(self, ns, body):
        return self._call(self.core.create_namespaced_pod, ns, body)

    def delete_pod(self, ns, name, uid=None, grace_period=None):
        body = {"preconditions": {"uid": uid}} if uid else {}
        if grace_period is not None:
            body["gracePeriodSeconds"] = grace_period
        return self._call(self.core.delete_namespaced_pod, name, ns, body=body or None)

    def patch_pod_status(self, ns, name, patch):
        return self._call(self.core.patch_namespaced_pod_status, name, ns, patch)

    def list_pods(self, ns, label_selector=None, field_selector=None):
        kwargs = {}
        if label_selector:
            kwargs["label_selector"] = label_selector
        if field_selector:
            kwargs["field_selector"] = field_selector
        if ns is None:
            return self._call(self.core.list_pod_for_all_namespaces, **kwargs)
        return self._call(self.core.list_namespaced_pod, ns, **kwargs)

    def create_event(self, ns, body):
        return self._call(self.core.create_namespaced_event, ns, body)

    # nodes
    def list_nodes(self):
        return self._call(self.core.list_node)

    def create_node_lease(self, node):
        """The Lease kubelet keeps for its node in kube-node-lease (its heartbeat)."""
        return self._call(self.coordination.create_namespaced_lease, "kube-node-lease", {
            "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
            "metadata": {"name": node, "namespace": "kube-node-lease"},
            "spec": {"holderIdentity": node, "leaseDurationSeconds": 40,
                     "renewTime": datetime.datetime.now(datetime.timezone.utc).strftime(
                         "%Y-%m-%dT%H:%M:%S.%fZ")}})  # a MicroTime

    # SparkApplications
    def get_app(self, ns, name):
        return self._call(self.custom.get_namespaced_custom_object, SPARK_GROUP, SPARK_VERSION,
                          ns, SPARK_PLURAL, name)

    def replace_app_status(self, ns, name, body):
        return self._call(self.custom.replace_namespaced_custom_object_status, SPARK_GROUP,
                          SPARK_VERSION, ns, SPARK_PLURAL, name, body)

    def delete_app(self, ns, name):
        return self._call(self.custom.delete_namespaced_custom_object, SPARK_GROUP,
                          SPARK_VERSION, ns, SPARK_PLURAL, name)

    def list_apps(self, ns):
        if ns is None:
            return self._call(self.custom.list_cluster_custom_object, SPARK_GROUP,
                              SPARK_VERSION, SPARK_PLURAL)
        return self._call(self.custom.list_namespaced_custom_object, SPARK_GROUP,
                          SPARK_VERSION, ns, SPARK_PLURAL)

    # watches: the response is handed back once its headers arrived, i.e. once the
    # stream is established.
    def watch(self, kind, ns, rv, timeout):
        common = dict(watch=True, resource_version=rv, allow_watch_bookmarks=True,
                      timeout_seconds=timeout, _preload_content=False,
                      _request_timeout=(10, timeout + 60))
        if kind == "pods":
            if ns is None:
                return self.core.list_pod_for_all_namespaces(**common)
            return self.core.list_namespaced_pod(ns, **common)
        if kind == "nodes":
            return self.core.list_node(**common)
        if ns is None:
            return self.custom.list_cluster_custom_object(SPARK_GROUP, SPARK_VERSION,
                                                          SPARK_PLURAL, **common)
        return self.custom.list_namespaced_custom_object(SPARK_GROUP, SPARK_VERSION, ns,
                                                         SPARK_PLURAL, **common)

    def list(self, kind, ns):
        if kind == "pods":
            return self.list_pods(ns)
        if kind == "nodes":
            return self.list_nodes()
        return self.list_apps(ns)


# --- shared cache and informers ---------------------------------------------------
class Cache:
    """What the informers have seen: kind -> key -> object. Objects are never mutated
    in place; readers get the stored dicts and must copy before changing them."""

    def __init__(self):
        self.lock = threading.Lock()
        self.objects = {"pods": {}, "nodes": {}, "sparkapplications": {}}
        self.subscribers = []

    def get(self, kind, key):
        with self.lock:
            return self.objects[kind].get(key)

    def items(self, kind, predicate=None):
        with self.lock:
            values = list(self.objects[kind].values())
        return [o for o in values if predicate is None or predicate(o)]

    def subscribe(self, fn):
        self.subscribers.append(fn)

    def apply(self, kind, etype, obj):
        key = key_of(obj)
        with self.lock:
            old = self.objects[kind].get(key)
            if etype == "DELETED":
                self.objects[kind].pop(key, None)
            else:
                self.objects[kind][key] = obj
        for fn in self.subscribers:
            fn(kind, etype, obj, old)

    def replace(self, kind, items):
        """A relist: objects gone since are DELETED, the rest ADDED or MODIFIED."""
        fresh = {key_of(o): o for o in items}
        with self.lock:
            stale = [o for k, o in self.objects[kind].items() if k not in fresh]
        for o in stale:
            self.apply(kind, "DELETED", o)
        for o in items:
            known = self.get(kind, key_of(o))
            if known is None:
                self.apply(kind, "ADDED", o)
            elif known.get("metadata", {}).get("resourceVersion") != \
                    o.get("metadata", {}).get("resourceVersion"):
                self.apply(kind, "MODIFIED", o)


class Informer(threading.Thread):
    """list, then watch from the list's resourceVersion; resumes after a stream ends,
    relists after 410 Gone."""

    WATCH_TIMEOUT = 300

    def __init__(self, api, cache, kind, ns, stop):
        super().__init__(name="informer-" + kind, daemon=True)
        self.api, self.cache, self.kind, self.ns, self.stop = api, cache, kind, ns, stop
        self.established = threading.Event()

    def run(self):
        rv, backoff = None, 0.1
        while not self.stop.is_set():
            try:
                if rv is None:
                    listed = self.api.list(self.kind, self.ns)
                    items = listed.get("items") or []
                    group = listed.get("apiVersion", "v1")
                    for o in items:  # list items of built-in kinds come without them
                        o.setdefault("apiVersion", group)
                        o.setdefault("kind", listed.get("kind", "")[:-len("List")])
                    self.cache.replace(self.kind, items)
                    rv = listed["metadata"]["resourceVersion"]
                resp = self.api.watch(self.kind, self.ns, rv, self.WATCH_TIMEOUT)
                self.established.set()
                backoff = 0.1
                try:
                    for line in iter_resp_lines(resp):
                        if self.stop.is_set():
                            return
                        event = json.loads(line)
                        etype, obj = event.get("type"), event.get("object") or {}
                        if etype == "ERROR":
                            if obj.get("code") == 410:
                                rv = None
                            break
                        new_rv = (obj.get("metadata") or {}).get("resourceVersion")
                        if etype != "BOOKMARK":
                            self.cache.apply(self.kind, etype, obj)
                        if new_rv:
                            rv = new_rv
                finally:
                    resp.release_conn()
            except ApiException as e:
                if e.status == 410:
                    rv = None
                log("informer", "%s: %s %s", self.kind, e.status, e.reason)
                self.stop.wait(backoff)
                backoff = min(backoff * 2, 2.0)
            except Exception as e:  # noqa: BLE001 - connection resets, bad lines, ...
                log("informer", "%s: %r", self.kind, e)
                self.stop.wait(backoff)
                backoff = min(backoff * 2, 2.0)


# --- actors -----------------------------------------------------------------------
class Timer:
    def __init__(self):
        self.cancelled = False

    def cancel(self):
        self.cancelled = True


class Actor(threading.Thread):
    """One emulated process: a thread running posted calls and timers one at a time."""

    def __init__(self, name):
        super().__init__(name=name, daemon=True)
        self.cond = threading.Condition()
        self.heap = []
        self.seq = itertools.count()
        self.stopped = False

    def call_at(self, when, fn, *args):
        timer = Timer()
        with self.cond:
            heapq.heappush(self.heap, (when, next(self.seq), timer, fn, args))
            self.cond.notify()
        return timer

    def post(self, fn, *args):
        return self.call_at(0, fn, *args)

    def call_later(self, delay, fn, *args):
        return self.call_at(time.monotonic() + max(0.0, delay), fn, *args)

    def stop(self):
        with self.cond:
            self.stopped = True
            self.cond.notify()

    def run(self):
        while True:
            with self.cond:
                while not self.stopped:
                    now = time.monotonic()
                    if self.heap and self.heap[0][0] <= now:
                        break
                    wait = self.heap[0][0] - now if self.heap else None
                    self.cond.wait(wait)
                if self.stopped:
                    return
                _, _, timer, fn, args = heapq.heappop(self.heap)
            if timer.cancelled:
                continue
            try:
                fn(*args)
            except Exception as e:  # noqa: BLE001 - a failed step must not kill the actor
                import traceback
                log(self.name, "error in %s: %r\n%s", getattr(fn, "__name__", fn), e,
                    traceback.format_exc())
