#!/usr/bin/python3
"""A stand-in for kube-apiserver (the resources and verbs Gleaner uses) and for kubelet's
/pods endpoint, for tests on machines without a cluster. It follows the real wire format:
paths, JSON shapes, v1 Status errors, resourceVersion semantics, chunked watch streams with
bookmarks, optimistic concurrency, patch content types, binding and eviction subresources,
creates with ?dryRun=All (answered, nothing stored).

Resources: pods, nodes, events, namespaces, secrets, configmaps, serviceaccounts,
daemonsets, priorityclasses, leases, mutatingwebhookconfigurations, and the custom
resources sparkapplications, elasticquotatrees, clustercolocationprofiles, nodemetrics,
propagation policies, Karmada clusters and resourcebindings, Kubeflow pytorchjobs and
tfjobs (merge and JSON patches
only). Writes get the server's defaulting and validation where Gleaner depends on it
(resources.py): webhook configurations, secrets' stringData, PriorityClass values, a
namespace's kubernetes.io/metadata.name label. Pods may be created in namespaces that have
no Namespace object; such a namespace has just that label.

ServiceAccount tokens (tokens.py): the token subresource (TokenRequest) issues bound JWTs
with the claims of real projected tokens, and authentication.k8s.io/v1 TokenReviews
(create only) check them as kube-apiserver does: signature, expiry, audiences, and that the
ServiceAccount and the bound pod or secret still exist with the same uid.

Pod creation runs mutating admission as kube-apiserver does (admission.py): the Priority
plugin (for stored PriorityClasses), then every matching webhook of every
MutatingWebhookConfiguration (by configuration name, then in order) is sent an
admission.k8s.io AdmissionReview over HTTPS, verified against its caBundle, within its
timeoutSeconds; JSONPatch answers are applied, denials and failures answered as the real
server words them (failurePolicy decides on unreachable or invalid webhooks), warnings become
Warning headers, and IfNeeded webhooks are reinvoked once after later changes. Webhooks named
by clientConfig.service are reached through addresses mapped with /_admin/webhook-service.
matchConditions (CEL) are refused when a configuration is written.

Usage: apiserver.py [--port 0] [--token T]; prints "ready port=N" once it listens.
Test controls live under /_admin/ (see admin.py); GET /_admin/webhook-calls reports the
webhook calls made."""

import argparse
import json
import os
import sys
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import admin  # noqa: E402
from admission import Admission  # noqa: E402
from faults import Faults  # noqa: E402
import discovery  # noqa: E402
import pod_validation  # noqa: E402
from pod_conditions import (can_ignore_disruption_budget, mark_disruption_target,  # noqa: E402
                            update_pod_condition)
import resources  # noqa: E402
import statuses  # noqa: E402
from routes import BUILT_IN_GROUPS, parse_route  # noqa: E402
import tokens  # noqa: E402
from store import ApiError, Store  # noqa: E402
import watch  # noqa: E402
from patch import PatchError, json_patch, merge_patch, strategic_merge_patch  # noqa: E402
from tls_server import serve_tls  # noqa: E402
from kselectors import (SelectorError, fields_match, labels_match,  # noqa: E402
                       parse_field_selector, parse_label_selector)

class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # Responses are written in several small pieces (headers, then body); with Nagle's
    # algorithm on, each keep-alive request then waits ~40 ms for the client's delayed ACK.
    disable_nagle_algorithm = True
    server_version = "gleaner-test-apiserver"

    def log_message(self, fmt, *args):
        if self.server.verbose:
            sys.stderr.write("apiserver: " + fmt % args + "\n")

    # --- plumbing --------------------------------------------------------------
    def send_response(self, code, message=None):
        if getattr(self, "logged", None) is not None:
            self.server.faults.answered(self.logged, code)  # the log shows the status code
        super().send_response(code, message)

    def send_json(self, code, body, headers=None):
        data = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        for text in getattr(self, "warnings", None) or []:
            # net.NewWarningHeader: code 299, agent "-", the text quoted.
            # The header goes out as UTF-8 bytes, as Go writes it.
            quoted = text.replace("\\", "\\\\").replace('"', '\\"')
            self.send_header("Warning", '299 - "%s"' % quoted.encode().decode("latin-1"))
        self.end_headers()
        self.wfile.write(data)

    def send_throttled(self, retry_after):
        """A request refused for load, as kube-apiserver refuses it: tooManyRequests in
        apiserver/pkg/server/filters/maxinflight.go (used by priority-and-fairness.go too)
        answers 429 with "Retry-After" and http.Error's plain-text body, not a Status; APF
        adds the UIDs of the FlowSchema and priority level that matched
        (setResponseHeaders)."""
        data = b"Too many requests, please try again later.\n"
        self.send_response(429)
        self.send_header("Content-Type", "text/plain; charset=utf-8")
        self.send_header("X-Content-Type-Options", "nosniff")
        self.send_header("Retry-After", retry_after)
        self.send_header("X-Kubernetes-PF-FlowSchema-UID", "test-flowschema")
        self.send_header("X-Kubernetes-PF-PriorityLevel-UID", "test-prioritylevel")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def send_status(self, code, message="", reason=""):
        body = {"kind": "Status", "apiVersion": "v1", "metadata": {},
                "status": "Success" if code < 400 else "Failure", "code": code}
        if message:
            body["message"] = message
        if reason:
            body["reason"] = reason
        self.send_json(code, body)

    def read_body(self):
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def json_body(self, raw):
        try:
            return json.loads(raw or b"null")
        except ValueError as e:
            raise ApiError(400, "BadRequest", "the body of the request was in an unknown format"
                           " - accepted media types include: application/json: %s" % e)

    def handle_any(self, method):
        url = urllib.parse.urlsplit(self.path)
        query = {k: v[-1] for k, v in urllib.parse.parse_qs(url.query, keep_blank_values=True)
                 .items()}
        raw = self.read_body()
        faults = self.server.faults
        self.logged = None  # a kept-alive connection reuses the handler
        self.warnings = []
        if url.path.startswith("/_admin/"):
            return admin.handle(self, method, url.path[len("/_admin/"):], query)
        prefix = self.server.path_prefix
        if prefix:
            # Served below a path, as a proxy does (Rancher's /k8s/clusters/<id>): a request
            # outside it is not the API server's.
            if not url.path.startswith(prefix + "/"):
                return self.send_json(404, {"kind": "Status", "status": "Failure",
                                            "reason": "NotFound", "code": 404,
                                            "message": "outside " + prefix})
            url = url._replace(path=url.path[len(prefix):])
        # "token": the bearer token the request came with, so a test can tell its clients
        # apart (an audit log's user).
        auth = self.headers.get("Authorization") or ""
        self.logged = {"method": method, "path": url.path, "query": query,
                       "contentType": self.headers.get("Content-Type", ""),
                       "token": auth[len("Bearer "):] if auth.startswith("Bearer ") else ""}
        faults.log(self.logged)
        try:
            stall = faults.take_stall(method, url.path)
            if stall:
                stall[1].wait(stall[0])
            if faults.token is not None and \
                    self.headers.get("Authorization") != "Bearer " + faults.token:
                raise ApiError(401, "Unauthorized", "Unauthorized")
            if faults.take("throttle"):
                return self.send_throttled(faults.throttle_retry_after)
            fail = faults.take_fail(method, url.path)
            if fail:
                raise statuses.injected(fail, method, url.path, query, raw)
            if url.path == "/pods" and method == "GET":
                return self.kubelet_pods()
            if method == "GET":
                found = discovery.document(url.path)
                if found is not None:
                    return self.send_json(200, found)
            route = parse_route(url.path)
            if route is None:
                raise statuses.not_served()
            return self.dispatch(method, route, query, raw)
        except ApiError as e:
            self.send_json(e.code, e.status(), e.headers)

    def do_GET(self):
        self.handle_any("GET")

    def do_POST(self):
        self.handle_any("POST")

    def do_PUT(self):
        self.handle_any("PUT")

    def do_PATCH(self):
        self.handle_any("PATCH")

    def do_DELETE(self):
        self.handle_any("DELETE")

    # --- API verbs -------------------------------------------------------------
    def dispatch(self, method, r, query, raw):
        store = self.server.store
        if tokens.serves(r):  # serviceaccounts/{name}/token and tokenreviews
            return self.send_json(201, self.server.tokens.serve(
                method, r, lambda: self.json_body(raw)))
        if r.name is None:
            if method == "GET" and parse_bool(query.get("watch")):
                return watch.serve(self, r, query)
            if method == "GET":
                return self.list(r, query)
            if method == "POST" and r.resource == "bindings":
                body = self.json_body(raw)
                return self.bind(r, (body.get("metadata") or {}).get("name", ""), body)
            if method == "POST":
                return self.create(r, query, raw)
            raise ApiError(405, "MethodNotAllowed", "the server does not allow this method")
        if r.sub == "binding" and method == "POST" and r.resource == "pods":
            return self.bind(r, r.name, self.json_body(raw))
        if r.sub == "eviction" and method == "POST" and r.resource == "pods":
            return self.evict(r, self.json_body(raw))
        if r.sub not in (None, "status") or (r.sub == "status" and not r.has_status):
            raise statuses.not_served()
        if method == "GET":
            return self.send_json(200, store.get(r.resource, r.ns, r.name, r.group))
        if method == "DELETE":
            options = self.json_body(raw) if raw else {}
            if not isinstance(options, dict):
                options = {}
            return self.send_json(200, store.delete(
                r.resource, r.ns, r.name, r.group, options.get("preconditions") or {},
                grace_period_of(options if raw else query)))
        if method == "PUT":
            body = self.json_body(raw)
            if not isinstance(body, dict):
                raise ApiError(400, "BadRequest", "expected an object")
            return self.send_json(200, store.update(r.resource, r.ns, r.name,
                                                    lambda cur: self.write(r, cur, body), r.group))
        if method == "PATCH":
            return self.patch(r, raw)
        raise ApiError(405, "MethodNotAllowed", "the server does not allow this method")

    def create(self, r, query, raw):
        obj = self.json_body(raw)
        if not isinstance(obj, dict):
            raise ApiError(400, "BadRequest", "expected an object")
        dry_run = query.get("dryRun")
        if dry_run not in (None, "All"):
            raise ApiError(422, "Invalid", 'CreateOptions.meta.k8s.io "" is invalid: dryRun: '
                           'Unsupported value: []string{"%s"}: supported values: "All"' % dry_run,
                           {"group": "meta.k8s.io", "kind": "CreateOptions", "causes": [{
                               "reason": "FieldValueNotSupported", "field": "dryRun",
                               "message": 'Unsupported value: []string{"%s"}: supported '
                                          'values: "All"' % dry_run}]})
        obj["kind"], obj["apiVersion"] = r.kind, r.api_version
        if not isinstance(obj.get("metadata"), dict):
            obj["metadata"] = {}
        meta_ns = obj["metadata"].get("namespace")
        if r.namespaced and meta_ns and meta_ns != r.ns:
            raise ApiError(400, "BadRequest", "the namespace of the provided object does "
                           "not match the namespace sent on the request")
        if not r.namespaced:
            obj["metadata"].pop("namespace", None)  # cluster-scoped: the server clears it
        resources.prepare(self.server.store, r.group, r.resource, obj)
        if (r.group, r.resource) == ("", "pods"):
            options = {"kind": "CreateOptions", "apiVersion": "meta.k8s.io/v1"}
            if dry_run:
                options["dryRun"] = ["All"]
            for field in ("fieldManager", "fieldValidation"):
                if query.get(field):
                    options[field] = query[field]
            obj = self.server.admission.admit_pod(r.ns, obj, bool(dry_run), options,
                                                  self.warnings)
            # Validation runs on what the webhooks made of the pod.
            pod_validation.validate_pod_resources(obj)
        self.send_json(201, self.server.store.create(r.resource, r.ns, obj, r.group,
                                                     dry_run=bool(dry_run)))

    def write(self, r, current, new):
        """Status-subresource rules: the main resource ignores status, /status only takes it."""
        new["kind"], new["apiVersion"] = r.kind, r.api_version
        if not r.has_status:
            return resources.prepare(self.server.store, r.group, r.resource, new, current)
        if r.sub == "status":
            result = current
            result["status"] = new.get("status", {})
            rv = (new.get("metadata") or {}).get("resourceVersion")
            result["metadata"]["resourceVersion"] = rv or current["metadata"]["resourceVersion"]
            return result
        if "status" in current:
            new["status"] = current["status"]
        else:
            new.pop("status", None)
        return resources.prepare(self.server.store, r.group, r.resource, new, current)

    def patch(self, r, raw):
        ctype = (self.headers.get("Content-Type") or "").split(";")[0].strip()
        body = self.json_body(raw)
        if ctype == "application/strategic-merge-patch+json" and r.group not in BUILT_IN_GROUPS:
            raise ApiError(415, "UnsupportedMediaType", "the body of the request was in an "
                           "unknown format - accepted media types include: "
                           "application/json-patch+json, application/merge-patch+json")
        appliers = {"application/merge-patch+json": merge_patch,
                    "application/strategic-merge-patch+json": strategic_merge_patch,
                    "application/json-patch+json": json_patch}
        if ctype not in appliers:
            raise ApiError(415, "UnsupportedMediaType", "the body of the request was in an unknown"
                           " format - accepted media types include: application/json-patch+json,"
                           " application/merge-patch+json, application/strategic-merge-patch+json")
        if ctype != "application/json-patch+json" and not isinstance(body, dict):
            raise ApiError(400, "BadRequest", "a merge patch must be a JSON object")

        def mutate(current):
            try:
                patched = appliers[ctype](current, body)
            except PatchError as e:
                raise ApiError(422, "Invalid", str(e))
            if not isinstance(patched, dict) or not isinstance(patched.get("metadata"), dict):
                raise ApiError(422, "Invalid", "patch produced an object without metadata")
            return self.write(r, current, patched)

        self.send_json(200, self.server.store.update(r.resource, r.ns, r.name, mutate, r.group))

    def bind(self, r, name, body):
        if not isinstance(body, dict) or not (body.get("target") or {}).get("name"):
            raise ApiError(422, "Invalid", "Binding.target.name: Required value")
        uid = (body.get("metadata") or {}).get("uid") or None
        node = body["target"]["name"]

        def assign(pod):
            if pod.get("spec", {}).get("nodeName"):
                raise ApiError(409, "Conflict", 'Operation cannot be fulfilled on pods/binding "%s"'
                               ': pod %s is already assigned to node "%s"'
                               % (name, name, pod["spec"]["nodeName"]),
                               {"name": name, "kind": "pods/binding"})
            pod.setdefault("spec", {})["nodeName"] = node
            update_pod_condition(pod.setdefault("status", {}), {
                "type": "PodScheduled", "status": "True", "lastProbeTime": None})
            return pod

        self.server.store.update("pods", r.ns, name, assign, expected_uid=uid)
        self.send_status(201)

    def evict(self, r, body):
        if not isinstance(body, dict) or body.get("kind") not in (None, "Eviction"):
            raise ApiError(400, "BadRequest", "expected a policy/v1 Eviction")
        if (body.get("metadata") or {}).get("name") not in (None, r.name):
            raise ApiError(400, "BadRequest", "name in URL does not match name in Eviction object")
        pod = self.server.store.get("pods", r.ns, r.name)
        if self.server.faults.take("eviction_429"):
            raise ApiError(429, "TooManyRequests", "Cannot evict pod as it would violate the "
                           "pod's disruption budget.", {"causes": [{
                               "reason": "DisruptionBudget",
                               "message": "The disruption budget test-pdb needs 1 healthy pods "
                                          "and has 1 currently"}]})
        options = body.get("deleteOptions")
        options = options if isinstance(options, dict) else {}
        preconditions = options.get("preconditions") or {}
        if not can_ignore_disruption_budget(pod):
            preconditions = mark_disruption_target(self.server.store, r.ns, r.name,
                                                   preconditions)
        self.server.store.delete("pods", r.ns, r.name, "", preconditions,
                                 grace_period_of(options))
        self.send_status(201)

    def list(self, r, query):
        predicate = matcher(r, query)
        store = self.server.store
        if query.get("continue"):
            rv, items, start, sid = store.load_snapshot(query["continue"])
        else:
            rv, items = store.snapshot(r.resource, r.ns, predicate)
            start, sid = 0, None
        limit = int(query.get("limit") or 0)
        meta = {"resourceVersion": str(rv)}
        page = items[start:start + limit] if limit > 0 else items[start:]
        end = start + len(page)
        if end < len(items):
            sid = sid or store.save_snapshot(rv, items)
            meta["continue"] = Store.continue_token(sid, rv, end)
            meta["remainingItemCount"] = len(items) - end
        if r.group in BUILT_IN_GROUPS:
            # Items of built-in lists carry no kind/apiVersion; custom resources' items do.
            page = [{k: v for k, v in o.items() if k not in ("kind", "apiVersion")} for o in page]
        self.send_json(200, {"kind": r.kind + "List", "apiVersion": r.api_version,
                             "metadata": meta, "items": page})

    def kubelet_pods(self):
        mode = self.server.faults.kubelet_mode
        if mode == "fail":
            raise ApiError(500, "InternalError", "kubelet: internal error")
        if mode == "garbage":
            data = b'{"kind":"PodList","items":[{"metadata"'
            self.send_response(200)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            return self.wfile.write(data)
        node = self.server.kubelet_node
        _, items = self.server.store.snapshot(
            "pods", None, lambda p: p.get("spec", {}).get("nodeName") == node)
        if mode == "empty":
            items = []
        items = [{k: v for k, v in o.items() if k not in ("kind", "apiVersion")} for o in items]
        self.send_json(200, {"kind": "PodList", "apiVersion": "v1", "metadata": {},
                             "items": items})


def grace_period_of(options):
    """DeleteOptions.gracePeriodSeconds (None: not given), from the request's body or, with
    no body, its query, as handlers/delete.go in apiserver's pkg/endpoints decodes them."""
    value = options.get("gracePeriodSeconds")
    if value is None:
        return None
    try:
        return int(value)
    except (TypeError, ValueError):
        raise ApiError(400, "BadRequest", "DeleteOptions.gracePeriodSeconds: %r is not an "
                       "integer" % (value,))


def parse_bool(text):
    """Go's strconv.ParseBool, which the API server uses for boolean query parameters."""
    return text in ("1", "t", "T", "true", "TRUE", "True")


def matcher(r, query):
    try:
        labels = parse_label_selector(query.get("labelSelector"))
        fields = parse_field_selector(r.resource, query.get("fieldSelector"))
    except SelectorError as e:
        raise ApiError(400, "BadRequest", str(e))
    return lambda o: o is not None and (r.ns is None or o["metadata"].get("namespace") == r.ns) \
        and labels_match(labels, o["metadata"].get("labels")) and fields_match(fields, o)


watch.matcher = matcher


class Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--token", default=None, help="bearer token required on API requests")
    parser.add_argument("--bookmark-interval", type=float, default=1.0)
    parser.add_argument("--history-limit", type=int, default=10000)
    parser.add_argument("--kubelet-node", default="node-1", help="node whose pods /pods lists")
    parser.add_argument("--tls-cert", help="serve HTTPS with this PEM certificate chain")
    parser.add_argument("--tls-key", help="private key of --tls-cert")
    parser.add_argument("--path-prefix", default="",
                        help="serve the API below this path (e.g. /k8s/clusters/c-1), as a proxy")
    parser.add_argument("--verbose", action="store_true")
    args = parser.parse_args()
    server = Server((args.host, args.port), Handler)
    server.store, server.faults = Store(args.history_limit), Faults(args.token)
    server.admission = Admission(server.store)
    server.tokens = tokens.Tokens(server.store, server.faults)
    server.bookmark_interval, server.kubelet_node = args.bookmark_interval, args.kubelet_node
    server.verbose = args.verbose
    server.path_prefix = args.path_prefix.rstrip("/")
    if args.tls_cert:
        import ssl
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(args.tls_cert, args.tls_key)
        serve_tls(server, context)

    def exit_with_parent():
        # The test that started us holds our stdin; when it goes away, so do we.
        sys.stdin.read()
        os._exit(0)

    threading.Thread(target=exit_with_parent, daemon=True).start()
    print("ready port=%d" % server.server_address[1], flush=True)
    try:
        server.serve_forever(poll_interval=0.1)
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
