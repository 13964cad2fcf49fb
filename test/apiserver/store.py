"""Objects, the global resourceVersion, the change history that watches replay, and
consistent list snapshots for limit/continue."""

import base64
import copy
import datetime
import json
import threading
import uuid


class ApiError(Exception):
    """An error answered as a v1 Status object."""

    def __init__(self, code, reason, message, details=None, headers=None, body=None):
        super().__init__(message)
        self.code, self.reason, self.message = code, reason, message
        self.details, self.headers = details, dict(headers or {})
        self.body = body  # a complete Status to answer as it is (an admission webhook's)
        # responsewriters.ErrorNegotiated (apiserver/pkg/endpoints/handlers/responsewriters/
        # writers.go): an error whose details ask for a wait also says so in Retry-After.
        wait = (details or {}).get("retryAfterSeconds") or 0
        if wait > 0:
            self.headers.setdefault("Retry-After", str(wait))

    def status(self):
        """The v1 Status, its fields as Go writes them (every field of metav1.Status and
        StatusDetails is omitempty): an empty reason (StatusReasonUnknown), message or
        details field left out, details present whenever the error has them, even empty."""
        if self.body is not None:
            return self.body
        body = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure"}
        if self.message:
            body["message"] = self.message
        if self.reason:
            body["reason"] = self.reason
        if self.details is not None:
            body["details"] = {k: v for k, v in self.details.items() if v not in ("", None, [], 0)}
        body["code"] = self.code
        return body


def not_found(resource, name, group=""):
    return ApiError(404, "NotFound", '%s "%s" not found' % (_qualified(resource, group), name),
                    {"name": name, "group": group, "kind": plural(resource)})


def conflict(resource, name, group="", why="the object has been modified; please apply your "
             "changes to the latest version and try again"):
    return ApiError(409, "Conflict", 'Operation cannot be fulfilled on %s "%s": %s'
                    % (_qualified(resource, group), name, why),
                    {"name": name, "group": group, "kind": plural(resource)})


def expired(message):
    """errors.NewResourceExpired (apimachinery pkg/api/errors/errors.go)."""
    return ApiError(410, "Expired", message)


# Resources whose metadata.generation the server keeps (spec changes bump it), as the API
# server does for workload objects such as DaemonSets, and for custom resources with a
# status subresource (Karmada reads a ResourceBinding's generation).
GENERATED = {"daemonsets", "resourcebindings"}
TEMPLATE_GENERATION = "deprecated.daemonset.template.generation"


def plural(resource):
    """The resource's plural name. A store key is the plural, or plural@group for a plural
    that more than one group serves (a real API server keeps them apart by group)."""
    return resource.split("@", 1)[0]


def _qualified(resource, group):
    return plural(resource) + ("." + group if group else "")


def format_rfc3339(moment):
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_rfc3339(text):
    return datetime.datetime.strptime(text, "%Y-%m-%dT%H:%M:%SZ").replace(
        tzinfo=datetime.timezone.utc)


def now_rfc3339():
    return format_rfc3339(datetime.datetime.now(datetime.timezone.utc))


DEFAULT_POD_GRACE = 30  # spec.terminationGracePeriodSeconds's default (pkg/apis/core/v1)


def pod_grace(pod, requested):
    """podStrategy.CheckGracefulDelete (pkg/registry/core/pod/strategy.go): the grace period
    the delete asks for, else the pod's terminationGracePeriodSeconds (30 when unset, the
    scheme's default); 0 for a pod bound to no node or already Succeeded or Failed, whose
    containers run nowhere; a negative one counts as 1."""
    grace = requested
    if grace is None:
        grace = (pod.get("spec") or {}).get("terminationGracePeriodSeconds")
    if grace is None:
        grace = DEFAULT_POD_GRACE
    if not (pod.get("spec") or {}).get("nodeName") or \
            (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
        grace = 0
    return 1 if grace < 0 else grace


def default_pod(pod):
    """The scheme defaulting of pod fields the server fills before admission (and again
    after each webhook patch), of those this stand-in models."""
    spec = pod.setdefault("spec", {})
    if isinstance(spec, dict):
        spec.setdefault("schedulerName", "default-scheduler")
    return pod


NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"


def pod_qos_class(pod):
    """The QoS class the API server computes on pod creation (pkg/apis/core/helper/qos)."""
    containers = pod.get("spec", {}).get("containers", []) + pod.get("spec", {}).get(
        "initContainers", [])
    requests, limits, guaranteed = {}, {}, True
    for c in containers:
        res = c.get("resources", {})
        req, lim = res.get("requests", {}), res.get("limits", {})
        for name in ("cpu", "memory"):
            if name in req:
                requests[name] = True
            if name in lim:
                limits[name] = True
            if name not in lim or (name in req and req[name] != lim[name]):
                guaranteed = False
    if not requests and not limits:
        return "BestEffort"
    if guaranteed and len(limits) == 2:
        return "Guaranteed"
    return "Burstable"


class Store:
    def __init__(self, history_limit=10000):
        self.cond = threading.Condition()
        self.rv = 1
        self.objects = {}  # resource -> {(namespace, name): obj}
        self.history = []  # (rv, resource, type, old, new)
        self.history_limit = history_limit
        self.compacted_rv = 0  # watches from at or below this rv answer 410 Expired
        self.snapshots = {}  # list snapshot id -> (rv, [objects])
        self.drop_generation = 0  # bumped to break every open watch stream

    # --- reads -----------------------------------------------------------------
    def get(self, resource, ns, name, group=""):
        with self.cond:
            obj = self.objects.get(resource, {}).get((ns, name))
            if obj is None:
                raise not_found(resource, name, group)
            return copy.deepcopy(obj)

    def snapshot(self, resource, ns, predicate):
        """Every matching object sorted by namespace/name, at the current rv."""
        with self.cond:
            items = [copy.deepcopy(o) for k, o in sorted(self.objects.get(resource, {}).items())
                     if (ns is None or k[0] == ns) and predicate(o)]
            return self.rv, items

    def save_snapshot(self, rv, items):
        with self.cond:
            sid = uuid.uuid4().hex
            self.snapshots[sid] = (rv, items)
            if len(self.snapshots) > 64:
                self.snapshots.pop(next(iter(self.snapshots)))
            return sid

    def load_snapshot(self, token):
        try:
            decoded = json.loads(base64.urlsafe_b64decode(token.encode()))
            sid, start, rv = decoded["id"], int(decoded["start"]), int(decoded["rv"])
        except (ValueError, KeyError, TypeError) as e:
            raise ApiError(400, "BadRequest", "continue key is not valid: %s" % e)
        with self.cond:
            if rv < self.compacted_rv or sid not in self.snapshots:
                raise expired("The provided continue parameter is too old to display a "
                              "consistent list result. You can start a new list without the "
                              "continue parameter.")
            return self.snapshots[sid][0], self.snapshots[sid][1], start, sid

    @staticmethod
    def continue_token(sid, rv, start):
        raw = json.dumps({"id": sid, "rv": rv, "start": start}).encode()
        return base64.urlsafe_b64encode(raw).decode()

    # --- writes ----------------------------------------------------------------
    def _record(self, resource, kind, old, new):
        self.history.append((self.rv, resource, kind, old, new))
        if len(self.history) > self.history_limit:
            dropped = self.history.pop(0)
            self.compacted_rv = max(self.compacted_rv, dropped[0])
        self.cond.notify_all()

    def create(self, resource, ns, obj, group="", dry_run=False):
        """dry_run: everything a create does (name generation, uid, defaults, the
        AlreadyExists check) but nothing stored, no resourceVersion, no watch event."""
        with self.cond:
            meta = obj.setdefault("metadata", {})
            if not meta.get("name") and meta.get("generateName"):
                meta["name"] = meta["generateName"] + uuid.uuid4().hex[:5]
            name = meta.get("name")
            if not name:
                raise ApiError(422, "Invalid", "%s is invalid: metadata.name: Required value: "
                               "name or generateName is required" % _qualified(resource, group),
                               {"kind": plural(resource), "group": group, "causes": [{
                                   "reason": "FieldValueRequired",
                                   "message": "Required value: name or generateName is required",
                                   "field": "metadata.name"}]})
            table = self.objects.setdefault(resource, {})
            if (ns, name) in table:
                raise ApiError(409, "AlreadyExists", '%s "%s" already exists'
                               % (_qualified(resource, group), name),
                               {"name": name, "group": group, "kind": plural(resource)})
            if not dry_run:
                self.rv += 1
            if ns is not None:
                meta["namespace"] = ns
            meta["uid"] = str(uuid.uuid4())
            if dry_run:
                meta.pop("resourceVersion", None)
            else:
                meta["resourceVersion"] = str(self.rv)
            meta["creationTimestamp"] = now_rfc3339()
            meta.pop("generateName", None) if meta.get("name") else None
            for system_set in ("deletionTimestamp", "deletionGracePeriodSeconds"):
                meta.pop(system_set, None)  # only a delete sets them
            if resource in GENERATED:
                meta["generation"] = 1
            if resource == "daemonsets":
                meta.setdefault("annotations", {})[TEMPLATE_GENERATION] = "1"
            if resource == "namespaces":
                # The namespace strategy: phase Active, the kubernetes finalizer, and the
                # label that carries the namespace's name.
                if not isinstance(meta.get("labels"), dict):
                    meta["labels"] = {}
                meta["labels"][NAMESPACE_NAME_LABEL] = name
                obj["status"] = {"phase": "Active"}
                finalizers = obj.setdefault("spec", {}).setdefault("finalizers", [])
                if "kubernetes" not in finalizers:
                    finalizers.append("kubernetes")
            if resource == "pods":
                default_pod(obj)
                status = obj.setdefault("status", {})
                status.setdefault("phase", "Pending")
                status["qosClass"] = pod_qos_class(obj)
            if dry_run:
                return copy.deepcopy(obj)
            table[(ns, name)] = obj
            self._record(resource, "ADDED", None, copy.deepcopy(obj))
            return copy.deepcopy(obj)

    def update(self, resource, ns, name, mutate, group="", expected_uid=None):
        """mutate(current_copy) returns the new object; rv preconditions are checked here."""
        with self.cond:
            table = self.objects.get(resource, {})
            current = table.get((ns, name))
            if current is None:
                raise not_found(resource, name, group)
            if expected_uid is not None and expected_uid != current["metadata"]["uid"]:
                raise conflict(resource, name, group, "Precondition failed: UID in precondition: "
                               "%s, UID in object meta: %s" % (expected_uid,
                                                               current["metadata"]["uid"]))
            new = mutate(copy.deepcopy(current))
            meta = new.setdefault("metadata", {})
            # A uid in the written object (a PUT, or a patch that names one) is a
            # precondition, as the API server's storage checks it.
            if meta.get("uid") not in (None, "") and meta["uid"] != current["metadata"]["uid"]:
                raise conflict(resource, name, group, "Precondition failed: UID in "
                               "precondition: %s, UID in object meta: %s"
                               % (meta["uid"], current["metadata"]["uid"]))
            wanted_rv = meta.get("resourceVersion")
            if wanted_rv not in (None, "") and wanted_rv != current["metadata"]["resourceVersion"]:
                raise conflict(resource, name, group)
            for immutable in ("name", "namespace", "uid", "creationTimestamp"):
                if immutable in current["metadata"]:
                    meta[immutable] = current["metadata"][immutable]
            if resource == "namespaces":
                if not isinstance(meta.get("labels"), dict):
                    meta["labels"] = {}
                meta["labels"][NAMESPACE_NAME_LABEL] = meta["name"]
            for system_set in ("deletionTimestamp", "deletionGracePeriodSeconds"):
                if system_set in current["metadata"]:
                    meta[system_set] = current["metadata"][system_set]
                else:
                    meta.pop(system_set, None)  # writers cannot set them
            terminating = "deletionTimestamp" in meta
            if terminating:
                added = [f for f in meta.get("finalizers") or []
                         if f not in (current["metadata"].get("finalizers") or [])]
                if added:
                    raise ApiError(422, "Invalid", '%s "%s" is invalid: metadata.finalizers: '
                                   "Forbidden: no new finalizers can be added if the object "
                                   "is being deleted, found new finalizers %s"
                                   % (_qualified(resource, group), name, added),
                                   {"name": name, "group": group, "kind": plural(resource)})
            if resource in GENERATED:
                # metadata.generation is the server's: it moves with every spec change.
                meta["generation"] = current["metadata"].get("generation", 1) + (
                    1 if new.get("spec") != current.get("spec") else 0)
            if resource == "daemonsets":
                # The DaemonSet strategy keeps the template's own generation in an annotation
                # (the pods' pod-template-generation label): it moves only with the template.
                old = int((current["metadata"].get("annotations") or {}).get(TEMPLATE_GENERATION, "1"))
                bumped = (new.get("spec") or {}).get("template") != (current.get("spec") or {}).get("template")
                meta.setdefault("annotations", {})[TEMPLATE_GENERATION] = str(old + (1 if bumped else 0))
            if new == current:
                return copy.deepcopy(current)  # a no-op write does not bump the rv
            self.rv += 1
            meta["resourceVersion"] = str(self.rv)
            if terminating and not meta.get("finalizers") and \
                    not current["metadata"].get("deletionGracePeriodSeconds"):
                # The write that leaves a deleted object without finalizers removes it, once
                # its grace period is 0 (ShouldDeleteDuringUpdate in apiserver's
                # pkg/registry/generic/registry/store.go): a pod still in its grace period
                # stays until kubelet deletes it.
                del table[(ns, name)]
                self._record(resource, "DELETED", copy.deepcopy(current), copy.deepcopy(new))
                return copy.deepcopy(new)
            table[(ns, name)] = new
            self._record(resource, "MODIFIED", copy.deepcopy(current), copy.deepcopy(new))
            return copy.deepcopy(new)

    def delete(self, resource, ns, name, group="", preconditions=None, grace_period=None):
        """DeleteOptions.preconditions (uid, resourceVersion) are checked as the API server
        does: a mismatch is a 409 and the object stays. A pod is deleted gracefully (see
        pod_grace): marked with metadata.deletionTimestamp and deletionGracePeriodSeconds
        and left for its node's kubelet, which deletes it again with grace 0 once its
        containers have stopped. Any other object with finalizers is only marked and goes
        with its last finalizer; without finalizers it goes at once."""
        with self.cond:
            table = self.objects.get(resource, {})
            current = table.get((ns, name))
            if current is None:
                raise not_found(resource, name, group)
            meta = current["metadata"]
            for field, key in (("uid", "UID"), ("resourceVersion", "ResourceVersion")):
                want = (preconditions or {}).get(field)
                if want is not None and want != meta.get(field):
                    raise conflict(resource, name, group, "Precondition failed: %s in "
                                   "precondition: %s, %s in object meta: %s"
                                   % (key, want, key, meta.get(field)))
            if resource == "pods":
                return self._delete_pod(table, ns, name, grace_period)
            if meta.get("finalizers"):
                # The object stays, marked, until its finalizers are gone; deleting it again
                # changes nothing.
                if "deletionTimestamp" in meta:
                    return copy.deepcopy(current)
                return self._mark(resource, table, ns, name, 0)
            return self._remove(resource, table, ns, name)

    def _delete_pod(self, table, ns, name, grace_period):
        """Graceful deletion as kube-apiserver does it for pods: rest.BeforeDelete
        (apiserver's pkg/registry/rest/delete.go) with podStrategy.CheckGracefulDelete
        (pkg/registry/core/pod/strategy.go), then the store's Delete
        (pkg/registry/generic/registry/store.go): the pod is written marked (MODIFIED) and
        removed (DELETED) only when its grace period is 0 and no finalizer remains."""
        meta = table[(ns, name)]["metadata"]
        grace = pod_grace(table[(ns, name)], grace_period)
        if "deletionTimestamp" in meta:
            marked_grace = meta.get("deletionGracePeriodSeconds") or 0
            if marked_grace == 0:
                grace = 0  # its grace is over (finalizers pending): it goes now if it may
            elif grace_period is None or grace >= marked_grace:
                return copy.deepcopy(table[(ns, name)])  # may only be shortened
        if meta.get("deletionGracePeriodSeconds") != grace or "deletionTimestamp" not in meta:
            self._mark("pods", table, ns, name, grace)
        answer = copy.deepcopy(table[(ns, name)])
        node = (answer.get("spec") or {}).get("nodeName")
        if grace > 0 and not self._kubelet_serves(node):
            # No kubelet runs for this node (it holds no Lease in kube-node-lease, kubelet's
            # heartbeat): the server stands in for one whose containers stop at once, with
            # kubelet's finishing delete (grace 0, pkg/kubelet/status/status_manager.go).
            # A test that wants the pod to stay Terminating holds that Lease itself.
            # The stand-in's rule, not kube-apiserver's: a real server leaves the pod
            # Terminating until podgc (kube-controller-manager pkg/controller/podgc) or a
            # force delete removes it (docs/testing.md, "Deleting a pod").
            self._mark("pods", table, ns, name, 0)
            grace = 0
        if grace > 0 or table[(ns, name)]["metadata"].get("finalizers"):
            return answer
        self._remove("pods", table, ns, name)
        return answer

    def _kubelet_serves(self, node):
        return bool(node) and ("kube-node-lease", node) in self.objects.get("leases", {})

    def _mark(self, resource, table, ns, name, grace):
        """The deletion's write: deletionTimestamp at the start of the deletion plus the
        grace period (a shortened grace period keeps the first delete's start, as
        BeforeDelete computes it), deletionGracePeriodSeconds the grace period."""
        current = table[(ns, name)]
        marked = copy.deepcopy(current)
        meta = marked["metadata"]
        start = datetime.datetime.now(datetime.timezone.utc)
        if "deletionTimestamp" in meta:
            start = parse_rfc3339(meta["deletionTimestamp"]) - datetime.timedelta(
                seconds=meta.get("deletionGracePeriodSeconds") or 0)
        self.rv += 1
        meta.update({"deletionTimestamp": format_rfc3339(
                         start + datetime.timedelta(seconds=grace)),
                     "deletionGracePeriodSeconds": grace, "resourceVersion": str(self.rv)})
        table[(ns, name)] = marked
        self._record(resource, "MODIFIED", copy.deepcopy(current), copy.deepcopy(marked))
        return copy.deepcopy(marked)

    def _remove(self, resource, table, ns, name):
        current = table.pop((ns, name))
        self.rv += 1
        gone = copy.deepcopy(current)
        gone["metadata"]["resourceVersion"] = str(self.rv)
        self._record(resource, "DELETED", copy.deepcopy(current), gone)
        return copy.deepcopy(gone)

    def compact(self):
        """Forgets the history, as etcd compaction does: older rvs answer 410 from now on."""
        with self.cond:
            self.compacted_rv = self.rv
            self.history.clear()
            self.snapshots.clear()
            self.cond.notify_all()

    def drop_watches(self):
        with self.cond:
            self.drop_generation += 1
            self.cond.notify_all()
