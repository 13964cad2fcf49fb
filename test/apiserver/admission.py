"""Admission of pod creations, in kube-apiserver's order: the built-in Priority plugin, then
the mutating admission webhooks that MutatingWebhookConfigurations register, called over
HTTPS with admission.k8s.io AdmissionReviews, with one reinvocation round for webhooks whose
reinvocationPolicy is IfNeeded.

Modelled on k8s.io/apiserver's pkg/admission/plugin/webhook (mutating/dispatcher.go,
generic/webhook.go, predicates/, request/admissionreview.go, errors/statuserror.go) and
pkg/admission/reinvocation.go."""

import base64
import copy
import http.client
import json
import socket
import ssl
import threading
import time
import urllib.parse
import uuid

from kselectors import label_selector_matches
from patch import PatchError, json_patch
from store import NAMESPACE_NAME_LABEL, ApiError, default_pod

# Who the webhooks are told made the request (the stand-in authenticates one bearer token).
USER_INFO = {"username": "system:admin", "groups": ["system:masters", "system:authenticated"]}
POD_KIND = {"group": "", "version": "v1", "kind": "Pod"}
POD_RESOURCE = {"group": "", "version": "v1", "resource": "pods"}


class CallError(Exception):
    """ErrCallingWebhook: the webhook could not be called or answered nonsense; the
    webhook's failurePolicy decides whether the request fails."""

    def __init__(self, hook, reason):
        super().__init__(reason)
        self.hook, self.reason = hook, reason

    def __str__(self):
        return 'failed calling webhook "%s": %s' % (self.hook.name, self.reason)


def internal_error(message):
    """apierrors.NewInternalError."""
    return ApiError(500, "InternalError", "Internal error occurred: " + message,
                    {"causes": [{"message": message}]})


def forbidden(pod, message):
    """admission.NewForbidden for a pod not yet named: its name, else its generateName."""
    meta = pod.get("metadata") or {}
    name = meta.get("name") or meta.get("generateName") or "Unknown"
    return ApiError(403, "Forbidden", 'pods "%s" is forbidden: %s' % (name, message),
                    {"name": name, "kind": "pods"})


def denied(hook_name, result):
    """webhookerrors.ToStatusErr: the webhook's own Status, made a failure."""
    result = dict(result) if isinstance(result, dict) else {}
    code = result.get("code") if isinstance(result.get("code"), int) else 0
    code = code if code >= 400 else 400
    by = 'admission webhook "%s" denied the request' % hook_name
    if result.get("message"):
        message = "%s: %s" % (by, result["message"])
    elif result.get("reason"):
        message = "%s: %s" % (by, result["reason"])
    else:
        message = by + " without explanation"
    body = {"kind": "Status", "apiVersion": "v1", "metadata": result.get("metadata") or {},
            "status": "Failure" if result.get("status") in (None, "", "Success")
            else result["status"], "message": message, "code": code}
    for field in ("reason", "details"):
        if result.get(field):
            body[field] = result[field]
    return ApiError(code, body.get("reason", ""), message, body.get("details"), body=body)


def _canonical(value):
    """For apiequality.Semantic.DeepEqual on typed objects: a null, an empty map, list or
    string and an absent field are all the same value once decoded into Go structs."""
    if isinstance(value, dict):
        out = {k: _canonical(v) for k, v in value.items()}
        return {k: v for k, v in out.items() if v not in (None, {}, [], "")}
    if isinstance(value, list):
        return [_canonical(v) for v in value]
    return value


def _exact_or_wildcard(items, requested):
    return any(item in ("*", requested) for item in items or [])


def rule_matches_pod_create(rule):
    """rules.Matcher for (CREATE, pods, "" group, v1, namespaced, no subresource)."""
    if rule.get("scope") not in (None, "*", "Namespaced"):
        return False
    if not _exact_or_wildcard(rule.get("operations"), "CREATE"):
        return False
    if not _exact_or_wildcard(rule.get("apiGroups"), ""):
        return False
    if not _exact_or_wildcard(rule.get("apiVersions"), "v1"):
        return False
    for resource in rule.get("resources") or []:
        res, _, sub = resource.partition("/")
        if res in ("*", "pods") and sub in ("*", ""):
            return True
    return False


class Hook:
    def __init__(self, configuration, index, spec):
        self.configuration, self.index, self.spec = configuration, index, spec
        self.name = spec.get("name", "")
        self.uid = "%s/%s/%d" % (configuration, self.name, index)  # the accessor's GetUID


class _Connection(http.client.HTTPSConnection):
    """Connects to `host` but verifies the certificate for `server_name` (a service's
    <name>.<namespace>.svc when the address comes from the admin map)."""

    def __init__(self, host, port, server_name, **kwargs):
        super().__init__(host, port, **kwargs)
        self.server_name = server_name

    def connect(self):
        http.client.HTTPConnection.connect(self)
        self.sock = self._context.wrap_socket(self.sock, server_hostname=self.server_name)


class _Round:
    """webhookReinvokeContext: which IfNeeded webhooks a later change requires to run again."""

    def __init__(self):
        self.is_reinvoke = False
        self.should_reinvoke = False
        self.previously_invoked = set()
        self.reinvoke = set()

    def require_reinvoking_previously_invoked(self):
        if self.previously_invoked:
            self.reinvoke |= self.previously_invoked
            self.previously_invoked = set()


class Admission:
    def __init__(self, store):
        self.store = store
        self.lock = threading.Lock()
        self.calls = []  # one record per webhook call, for /_admin/webhook-calls
        self.services = {}  # (namespace, name, port) -> "host:port", for clientConfig.service

    # --- test controls ------------------------------------------------------------
    def report(self):
        with self.lock:
            counts = {}
            for call in self.calls:
                counts[call["webhook"]] = counts.get(call["webhook"], 0) + 1
            return {"counts": counts, "calls": copy.deepcopy(self.calls)}

    def clear_calls(self):
        with self.lock:
            self.calls = []

    def map_service(self, namespace, name, port, address):
        with self.lock:
            if address:
                self.services[(namespace, name, port)] = address
            else:
                self.services.pop((namespace, name, port), None)

    # --- the admission chain -------------------------------------------------------
    def admit_pod(self, namespace, pod, dry_run, options, warnings):
        """Runs mutating admission on a pod create; returns the pod to store. Raises
        ApiError with the answer the API server would give. `warnings` collects the texts
        of Warning headers for the response (errors included)."""
        meta = pod.setdefault("metadata", {})
        meta["namespace"] = namespace
        # rest.WipeObjectMetaSystemFields: what the server sets is not the client's to send.
        for field in ("uid", "deletionTimestamp", "deletionGracePeriodSeconds", "selfLink"):
            meta.pop(field, None)
        meta["creationTimestamp"] = None
        default_pod(pod)
        _, configurations = self.store.snapshot(
            "mutatingwebhookconfigurations", None, lambda o: True)  # sorted by name
        hooks = [Hook(c["metadata"]["name"], i, h) for c in configurations
                 for i, h in enumerate(c.get("webhooks") or [])]
        state = _Round()
        request = {"namespace": namespace, "name": meta.get("name") or "", "dryRun": dry_run,
                   "options": options, "warnings": warnings}
        pod = self.priority(pod)
        pod = self.dispatch(hooks, state, request, pod)
        if state.should_reinvoke:
            # reinvoker.Admit: the whole mutating chain once more, in-tree plugins included.
            state.is_reinvoke = True
            before = _canonical(pod)
            pod = self.priority(pod)
            if _canonical(pod) != before:
                state.require_reinvoking_previously_invoked()
            pod = self.dispatch(hooks, state, request, pod)
        return pod

    def priority(self, pod):
        """The Priority admission plugin, for the PriorityClasses this server stores: a pod
        naming one gets its value and preemption policy (403 if it set others itself); a pod
        naming none gets the globalDefault class if one is stored. Pods naming a class that
        is not stored, or none when no default is stored, are left as they are (the real
        server refuses the first and sets priority 0 on the second)."""
        spec = pod.get("spec")
        if not isinstance(spec, dict):
            return pod
        name = spec.get("priorityClassName") or ""
        if name:
            try:
                pc = self.store.get("priorityclasses", None, name, "scheduling.k8s.io")
            except ApiError:
                return pod
        else:
            _, defaults = self.store.snapshot("priorityclasses", None,
                                              lambda o: o.get("globalDefault") is True)
            if not defaults:
                return pod
            pc = min(defaults, key=lambda o: o.get("value", 0))
            spec["priorityClassName"] = pc["metadata"]["name"]
        value, policy = pc.get("value", 0), pc.get("preemptionPolicy") or "PreemptLowerPriority"
        if spec.get("priority") is not None and spec["priority"] != value:
            raise forbidden(pod, "the integer value of priority (%s) must not be provided in pod "
                            "spec; priority admission controller computed %d from the given "
                            "PriorityClass name" % (spec["priority"], value))
        if spec.get("preemptionPolicy") is not None and spec["preemptionPolicy"] != policy:
            raise forbidden(pod, "the string value of PreemptionPolicy (%s) must not be provided"
                            " in pod spec; priority admission controller computed %s from the "
                            "given PriorityClass name" % (spec["preemptionPolicy"], policy))
        spec["priority"], spec["preemptionPolicy"] = value, policy
        return pod

    def namespace_labels(self, namespace):
        try:
            labels = dict(self.store.get("namespaces", None, namespace)["metadata"].get("labels")
                          or {})
        except ApiError:
            labels = {}  # no Namespace object: a namespace with only its automatic label
        labels[NAMESPACE_NAME_LABEL] = namespace
        return labels

    def should_call(self, hook, namespace, pod):
        h = hook.spec
        if h.get("namespaceSelector") and not label_selector_matches(
                h["namespaceSelector"], self.namespace_labels(namespace)):
            return False
        if h.get("objectSelector") and not label_selector_matches(
                h["objectSelector"], (pod.get("metadata") or {}).get("labels")):
            return False
        return any(isinstance(r, dict) and rule_matches_pod_create(r) for r in h.get("rules") or [])

    def dispatch(self, hooks, state, request, pod):
        """mutatingDispatcher.Dispatch: every matching webhook in order, each seeing the
        object as the webhooks before it left it."""
        for hook in hooks:
            if not self.should_call(hook, request["namespace"], pod):
                continue
            if state.is_reinvoke and hook.uid not in state.reinvoke:
                continue
            changed, error = False, None
            try:
                changed, pod = self.call(hook, state, request, pod)
            except (CallError, ApiError) as e:
                error = e
            if changed:
                state.require_reinvoking_previously_invoked()
                state.should_reinvoke = True
            if hook.spec.get("reinvocationPolicy") == "IfNeeded":
                state.previously_invoked.add(hook.uid)
            if error is None:
                continue
            if isinstance(error, CallError):
                if hook.spec.get("failurePolicy") == "Ignore":
                    continue
                raise internal_error(str(error))
            raise error
        return pod

    # --- one webhook call ----------------------------------------------------------------
    def endpoint(self, hook):
        """(url as the API server names it, address to connect to, TLS server name)."""
        config = hook.spec.get("clientConfig") or {}
        if config.get("url"):
            parsed = urllib.parse.urlsplit(config["url"])
            port = parsed.port or 443
            host = parsed.hostname
            return config["url"], (host, port), host
        service = config.get("service") or {}
        ns, name, port = service.get("namespace"), service.get("name"), service.get("port", 443)
        server_name = "%s.%s.svc" % (name, ns)
        url = "https://%s:%d%s" % (server_name, port, service.get("path") or "")
        with self.lock:
            address = self.services.get((ns, name, port))
        if not address:
            raise CallError(hook, 'failed to call webhook: Post "%s": service "%s" not found '
                            "(this test API server reaches services only through POST "
                            "/_admin/webhook-service)"
                            % (_with_timeout(url, hook.spec.get("timeoutSeconds") or 10), name))
        host, _, mapped_port = address.rpartition(":")
        return url, (host.strip("[]"), int(mapped_port)), server_name

    def tls_context(self, hook):
        bundle = (hook.spec.get("clientConfig") or {}).get("caBundle")
        try:
            if bundle:
                return ssl.create_default_context(cadata=base64.b64decode(bundle).decode())
            return ssl.create_default_context()
        except (ssl.SSLError, ValueError, UnicodeDecodeError):
            raise CallError(hook, "could not get REST client: unable to load root certificates:"
                            " unable to parse bytes as PEM block")

    def post(self, hook, url, address, server_name, context, body, timeout):
        """POSTs the review; returns (status code, body bytes) or raises CallError with Go's
        wording for the usual failures."""
        path_url = url.split("://", 1)[1]
        target = _with_timeout(path_url[path_url.find("/"):] if "/" in path_url else "/",
                               timeout)
        shown = _with_timeout(url, timeout)
        connection = _Connection(address[0], address[1], server_name, timeout=timeout,
                                 context=context)
        deadline = time.monotonic() + timeout
        try:
            connection.request("POST", target, body=body, headers={
                "Content-Type": "application/json", "Accept": "application/json, */*",
                "User-Agent": "kube-apiserver-admission"})
            response = connection.getresponse()
            data = response.read()
            if time.monotonic() > deadline:
                raise TimeoutError()
            return response.status, data
        except ConnectionRefusedError:
            reason = "dial tcp %s:%d: connect: connection refused" % address
        except ssl.SSLCertVerificationError as e:
            reason = "tls: failed to verify certificate: x509: %s" % (
                e.verify_message or e.reason)
        except (TimeoutError, socket.timeout):
            reason = "context deadline exceeded"
        except (OSError, ssl.SSLError, http.client.HTTPException) as e:
            reason = str(e) or type(e).__name__
        finally:
            connection.close()
        raise CallError(hook, 'failed to call webhook: Post "%s": %s' % (shown, reason))

    def review(self, version, uid, request, pod):
        """request.CreateV1AdmissionReview (v1beta1 has the same request fields)."""
        req = {"uid": uid, "kind": POD_KIND, "resource": POD_RESOURCE,
               "requestKind": POD_KIND, "requestResource": POD_RESOURCE,
               "namespace": request["namespace"], "operation": "CREATE", "userInfo": USER_INFO,
               "object": pod, "oldObject": None, "dryRun": request["dryRun"],
               "options": request["options"]}
        if request["name"]:
            req["name"] = request["name"]  # omitempty: absent while only generateName is set
        return {"kind": "AdmissionReview", "apiVersion": "admission.k8s.io/" + version,
                "request": req}

    def record(self, hook, state, request, uid, outcome, error=None):
        entry = {"configuration": hook.configuration, "webhook": hook.name,
                 "round": 1 if state.is_reinvoke else 0, "uid": uid,
                 "namespace": request["namespace"], "name": request["name"],
                 "dryRun": request["dryRun"], "outcome": outcome}
        if error:
            entry["error"] = error
        with self.lock:
            self.calls.append(entry)

    def call(self, hook, state, request, pod):
        """callAttrMutatingHook: returns (changed, pod)."""
        h = hook.spec
        if request["dryRun"]:
            if h.get("sideEffects") is None:
                raise CallError(hook, "Webhook SideEffects is nil")
            if h["sideEffects"] not in ("None", "NoneOnDryRun"):
                raise ApiError(400, "BadRequest", 'admission webhook "%s" does not support dry '
                               "run" % hook.name)
        version = next((v for v in h.get("admissionReviewVersions") or []
                        if v in ("v1", "v1beta1")), None)
        if version is None:
            raise CallError(hook, "could not create admission objects: webhook does not accept"
                            " known AdmissionReview versions (v1, v1beta1)")
        uid = str(uuid.uuid4())
        try:
            changed, pod, outcome = self._call(hook, request, pod, version, uid)
        except CallError as e:
            self.record(hook, state, request, uid, "error", e.reason)
            raise
        except ApiError as e:
            self.record(hook, state, request, uid,
                        "denied" if e.body is not None else "error", e.message)
            raise
        self.record(hook, state, request, uid, outcome)
        return changed, pod

    def _call(self, hook, request, pod, version, uid):
        h = hook.spec
        url, address, server_name = self.endpoint(hook)
        context = self.tls_context(hook)
        body = json.dumps(self.review(version, uid, request, pod)).encode()
        code, data = self.post(hook, url, address, server_name, context, body,
                               h.get("timeoutSeconds") or 10)
        if not 200 <= code < 300:
            raise CallError(hook, "failed to call webhook: " + _http_error(code, data))
        try:
            review = json.loads(data)
        except ValueError as e:
            raise CallError(hook, "failed to call webhook: %s" % e)
        if not isinstance(review, dict) or not isinstance(review.get("response", {}), dict):
            raise CallError(hook, "failed to call webhook: json: cannot unmarshal into Go value"
                            " of type v1.AdmissionReview")
        response = review.get("response")
        types = {"uid": str, "allowed": bool, "patch": str, "patchType": str, "status": dict,
                 "warnings": list}
        for field, kind in types.items():
            if response is not None and response.get(field) is not None and \
                    not isinstance(response[field], kind):
                raise CallError(hook, "failed to call webhook: json: cannot unmarshal "
                                "response.%s" % field)
        patch = b""
        if response is not None and response.get("patch"):
            try:
                patch = base64.b64decode(response["patch"], validate=True)
            except ValueError as e:
                raise CallError(hook, "failed to call webhook: illegal base64 data in "
                                "response.patch: %s" % e)
        invalid = "received invalid webhook response: "
        if response is None:
            raise CallError(hook, invalid + "webhook response was absent")
        patch_type = response.get("patchType")
        if version == "v1":
            if response.get("uid") != uid:
                raise CallError(hook, invalid + 'expected response.uid="%s", got "%s"'
                                % (uid, response.get("uid") or ""))
            api_version = review.get("apiVersion") or ""
            group, _, ver = api_version.rpartition("/")
            if api_version != "admission.k8s.io/v1" or review.get("kind") != "AdmissionReview":
                raise CallError(hook, invalid + "expected webhook response of admission.k8s.io/"
                                "v1, Kind=AdmissionReview, got %s/%s, Kind=%s"
                                % (group, ver, review.get("kind") or ""))
            if patch and patch_type is None:
                raise CallError(hook, invalid + "webhook returned response.patch but not "
                                "response.patchType")
            if not patch and patch_type is not None:
                raise CallError(hook, invalid + "webhook returned response.patchType but not "
                                "response.patch")
            if patch_type == "":
                raise CallError(hook, invalid + 'webhook returned invalid response.patchType of'
                                ' ""')
        else:
            patch_type = "JSONPatch" if patch else ""
        for text in response.get("warnings") or []:
            # The warning recorder drops empty texts, duplicates and control characters.
            if isinstance(text, str) and text and text not in request["warnings"] and \
                    not any(ord(c) < 32 or 127 <= ord(c) < 160 for c in text):
                request["warnings"].append(text)
        if not response.get("allowed"):
            raise denied(hook.name, response.get("status"))
        if not patch:
            return False, pod, "allowed"
        try:
            operations = json.loads(patch)
            if not isinstance(operations, list):
                raise ValueError("a JSON patch is a list of operations")
        except ValueError as e:
            raise CallError(hook, "received undecodable patch in webhook response: %s" % e)
        if not operations:
            return False, pod, "allowed"
        if patch_type != "JSONPatch":
            raise CallError(hook, 'unsupported patch type "%s"' % patch_type)
        try:
            patched = json_patch(pod, operations)
        except PatchError as e:
            raise internal_error(str(e))  # not a call error: the failure policy does not apply
        if not isinstance(patched, dict) or not isinstance(patched.get("metadata"), dict) or \
                not isinstance(patched.get("spec", {}), dict) or \
                patched.get("kind", "Pod") != "Pod" or patched.get("apiVersion", "v1") != "v1":
            raise internal_error("admission webhook %s: the patched object does not decode as a"
                                 " v1 Pod" % hook.name)
        patched["kind"], patched["apiVersion"] = "Pod", "v1"
        changed = _canonical(patched) != _canonical(pod)
        return changed, default_pod(patched), "patched" if changed else "allowed"


def _with_timeout(url, seconds):
    """client-go's Request.Timeout: the deadline travels as the timeout query parameter."""
    return url + ("&" if "?" in url else "?") + "timeout=%ds" % seconds


def _http_error(code, data):
    """What client-go's rest client makes of a non-2xx answer."""
    try:
        status = json.loads(data)
        if isinstance(status, dict) and status.get("kind") == "Status" and status.get("message"):
            return status["message"]
    except ValueError:
        pass
    generic = {400: "the server rejected our request for an unknown reason",
               401: "the server has asked for the client to provide credentials",
               403: "the server does not allow access to the requested resource",
               404: "the server could not find the requested resource",
               405: "the server does not allow this method on the requested resource",
               500: "an error on the server (%r) has prevented the request from succeeding"
                    % data.decode("utf-8", "replace")[:200],
               503: "the server is currently unable to handle the request",
               504: "the server was unable to return a response in the time allotted, but may "
                    "still be processing the request"}
    return generic.get(code, "the server responded with the status code %d but did not return "
                             "more information" % code)
