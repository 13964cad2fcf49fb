"""One call of a mutating admission webhook, as the test API server's admission
(admission.py) makes it: the address from the webhook's clientConfig (a URL, or a service
mapped through /_admin/webhook-service), its caBundle, an admission.k8s.io AdmissionReview
POSTed over HTTPS within the webhook's timeout, the response checked and its JSON patch
applied, and the failures worded as kube-apiserver words them.

Modelled on k8s.io/apiserver's pkg/admission/plugin/webhook (mutating/dispatcher.go's
callAttrMutatingHook, request/admissionreview.go, errors/statuserror.go)."""

import base64
import http.client
import json
import socket
import ssl
import time
import urllib.parse
import uuid

from patch import PatchError, json_patch
from statuses import internal_error
from store import ApiError, default_pod

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


def canonical(value):
    """For apiequality.Semantic.DeepEqual on typed objects: a null, an empty map, list or
    string and an absent field are all the same value once decoded into Go structs."""
    if isinstance(value, dict):
        out = {k: canonical(v) for k, v in value.items()}
        return {k: v for k, v in out.items() if v not in (None, {}, [], "")}
    if isinstance(value, list):
        return [canonical(v) for v in value]
    return value


class _Connection(http.client.HTTPSConnection):
    """Connects to `host` but verifies the certificate for `server_name` (a service's
    <name>.<namespace>.svc when the address comes from the admin map)."""

    def __init__(self, host, port, server_name, **kwargs):
        super().__init__(host, port, **kwargs)
        self.server_name = server_name

    def connect(self):
        http.client.HTTPConnection.connect(self)
        self.sock = self._context.wrap_socket(self.sock, server_hostname=self.server_name)


class WebhookCaller:
    """callAttrMutatingHook and what it needs. Mixed into admission.Admission, whose `lock`
    guards its `services` ((namespace, name, port) -> "host:port") and `calls` (one record
    per webhook call)."""

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
        changed = canonical(patched) != canonical(pod)
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
