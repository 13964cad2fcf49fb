"""ServiceAccount tokens as kube-apiserver (v1.30 defaults) issues and checks them: the
TokenRequest subresource (POST /api/v1/namespaces/{ns}/serviceaccounts/{name}/token) and
TokenReviews (POST /apis/authentication.k8s.io/v1/tokenreviews).

Tokens are JWTs with the claims of real bound (projected) ServiceAccount tokens: aud, exp,
iat, nbf, iss, jti, sub and the private "kubernetes.io" claim, which names the namespace, the
ServiceAccount and the object the token is bound to (a Pod, with the node the pod runs on, or
a Secret). The real server signs with RS256; these are signed with HS256 under a random key
made when the server starts, so nothing outside the server can make a token it accepts.

Issuing follows pkg/registry/core/serviceaccount/storage/token.go: a pod-bound token needs
the pod to run as that ServiceAccount (pods without spec.serviceAccountName count as
"default", the name the ServiceAccount admission plugin gives them), and a token asked for
3607 s for the API server's own audience and bound to a pod is issued for a year with a
"warnafter" claim (--service-account-extend-token-expiration, on by default).

A review checks what the real authenticator checks (pkg/serviceaccount/jwt.go, claims.go):
the issuer, the signature, the audiences, the times (with go-jose's 60 s leeway), and that
the ServiceAccount and the bound object still exist with the uids the token names. A token
that fails is answered in status.error in the real server's words, with HTTP 201. The real
server also remembers each successful authentication for 10 s, so there a token of a pod
deleted just after a successful review can pass for up to 10 s more; here every review looks
afresh. The tokens are for reviews only: API requests still need the server's --token.

Faults.token_node_info off (POST /_admin/token-node-info?on=false) stands for a cluster
before Kubernetes 1.30 (ServiceAccountTokenPodNodeInfo off): no "node" claim in new tokens,
no node-name/node-uid in reviews."""

import base64
import binascii
import calendar
import hashlib
import hmac
import json
import secrets
import time
import uuid

from resources import invalid
from statuses import not_served
from store import ApiError, conflict

GROUP = "authentication.k8s.io"
API_VERSION = GROUP + "/v1"
API_AUDIENCE = "https://kubernetes.default.svc.cluster.local"
ISSUER = API_AUDIENCE
KEY_ID = "gleaner-test-apiserver"
LEEWAY = 60  # go-jose's jwt.DefaultLeeway
DEFAULT_EXPIRATION, MIN_EXPIRATION, MAX_EXPIRATION = 3600, 600, 1 << 32
WARN_ONLY_EXPIRATION, EXTENDED_EXPIRATION = 3607, 365 * 24 * 3600
EXTRA = "authentication.kubernetes.io/"
INVALID = "invalid bearer token"
CRYPTO_FAILURE = "square/go-jose: error in cryptographic primitive"
NOT_ALLOWED = "the server does not allow this method on the requested resource"
TIME_FORMAT = "%Y-%m-%dT%H:%M:%SZ"


class Rejected(Exception):
    """A token the authenticator does not accept; the text is the review's status.error."""


def serves(route):
    """Whether a parsed route is one of the token routes Tokens.serve answers."""
    return (route.group, route.resource) == (GROUP, "tokenreviews") or (
        (route.group, route.resource, route.sub) == ("", "serviceaccounts", "token"))


def _b64(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unb64(text):
    """Go's base64.RawURLEncoding: no padding, URL alphabet only; ValueError otherwise."""
    if "=" in text or "+" in text or "/" in text or len(text) % 4 == 1:
        raise ValueError("illegal base64 data")
    try:
        return base64.b64decode(text + "=" * (-len(text) % 4), altchars=b"-_", validate=True)
    except binascii.Error as e:
        raise ValueError(str(e))


def _go_quoted(values):
    """fmt's %q of a []string."""
    return "[" + " ".join(json.dumps(v, ensure_ascii=False) for v in values) + "]"


def _timestamp(seconds):
    return time.strftime(TIME_FORMAT, time.gmtime(seconds))


def _deleted_before(obj, when):
    stamp = obj["metadata"].get("deletionTimestamp")
    return bool(stamp) and calendar.timegm(time.strptime(stamp, TIME_FORMAT)) < when


def _cannot_decode(kind, why):
    return ApiError(400, "BadRequest", '%s in version "v1" cannot be handled as a %s: %s'
                    % (kind, kind, why))


def _decode(body, kind):
    """(metadata, spec) of a TokenRequest or TokenReview body, with the field types the
    decoder insists on."""
    if not isinstance(body, dict):
        raise _cannot_decode(kind, "expected an object")
    meta, spec = body.get("metadata") or {}, body.get("spec") or {}
    if not isinstance(meta, dict) or not isinstance(spec, dict):
        raise _cannot_decode(kind, "metadata and spec must be objects")
    audiences = spec.get("audiences")
    if audiences is not None and (not isinstance(audiences, list) or
                                  not all(isinstance(a, str) for a in audiences)):
        raise _cannot_decode(kind, "spec.audiences must be a list of strings")
    return dict(meta), dict(spec)


class Tokens:
    def __init__(self, store, faults):
        self.store, self.faults = store, faults
        self.key = secrets.token_bytes(32)

    def serve(self, method, route, body):
        """Answers a request on a route serves() accepts; body() decodes the request body.
        Returns what to answer with 201."""
        if route.resource == "tokenreviews" and route.name is not None:
            raise not_served()
        if method != "POST":
            raise ApiError(405, "MethodNotAllowed", NOT_ALLOWED)
        if route.resource == "tokenreviews":
            return self.review(body())
        return self.request(route.ns, route.name, body())

    # --- TokenRequest --------------------------------------------------------------------
    def request(self, ns, name, body):
        meta, spec = _decode(body, "TokenRequest")
        expiration, ref = spec.get("expirationSeconds"), spec.get("boundObjectRef")
        if expiration is not None and (not isinstance(expiration, int) or
                                       isinstance(expiration, bool)):
            raise _cannot_decode("TokenRequest", "spec.expirationSeconds must be an integer")
        if ref is not None and (not isinstance(ref, dict) or not all(
                isinstance(ref.get(f, ""), str) for f in ("kind", "apiVersion", "name", "uid"))):
            raise _cannot_decode("TokenRequest", "spec.boundObjectRef must be an object of "
                                 "strings")
        for field, want in (("name", name), ("namespace", ns)):
            if meta.get(field) and meta[field] != want:
                raise invalid("TokenRequest", GROUP, name, [(
                    "metadata." + field, "Invalid", meta[field],
                    "must match the service account %s if specified" % field)])
        account = self.store.get("serviceaccounts", ns, name)
        audiences = spec.get("audiences") or [API_AUDIENCE]
        expiration = DEFAULT_EXPIRATION if expiration is None else expiration
        now = int(time.time())
        meta.update({"name": name, "namespace": ns, "creationTimestamp": _timestamp(now)})
        if not MIN_EXPIRATION <= expiration <= MAX_EXPIRATION:
            error = invalid("TokenRequest", GROUP, "", [(
                "spec.expirationSeconds", "Invalid", expiration,
                "may not specify a duration less than 10 minutes" if expiration < MIN_EXPIRATION
                else "may not specify a duration larger than 2^32 seconds")])
            error.details.pop("name")
            raise error
        private = {"namespace": ns, "serviceaccount": {
            "name": name, "uid": account["metadata"]["uid"]}}
        if ref is not None:
            ref = {f: ref[f] for f in ("kind", "apiVersion", "name", "uid") if ref.get(f)}
            private.update(self._bind(ns, name, ref))
        exp, warn_after = expiration, 0
        if "pod" in private and expiration == WARN_ONLY_EXPIRATION and \
                set(audiences) <= {API_AUDIENCE}:
            exp, warn_after = EXTENDED_EXPIRATION, expiration
        if warn_after:
            private["warnafter"] = now + warn_after
        claims = {"aud": audiences, "exp": now + exp, "iat": now, "nbf": now, "iss": ISSUER,
                  "jti": str(uuid.uuid4()), "sub": "system:serviceaccount:%s:%s" % (ns, name),
                  "kubernetes.io": private}
        return {"kind": "TokenRequest", "apiVersion": API_VERSION, "metadata": meta,
                "spec": {"audiences": audiences, "expirationSeconds": expiration,
                         "boundObjectRef": ref},
                "status": {"token": self.sign(claims),
                           "expirationTimestamp": _timestamp(now + expiration)}}

    def _bind(self, ns, name, ref):
        """The private claims naming the bound object (ApiErrors as the real server words
        them when it cannot be bound)."""
        parts = (ref.get("apiVersion") or "").split("/")
        group, version = ("", parts[0]) if len(parts) == 1 else (
            tuple(parts) if len(parts) == 2 else ("", ""))
        kind, ref_name = ref.get("kind", ""), ref.get("name", "")
        claims = {}
        if group == "" and kind == "Pod":
            pod = self.store.get("pods", ns, ref_name)
            spec = pod.get("spec") or {}
            if (spec.get("serviceAccountName") or "default") != name:
                raise ApiError(400, "BadRequest", 'cannot bind token for serviceaccount "%s" to '
                               'pod running with different serviceaccount name.' % name)
            uid = pod["metadata"]["uid"]
            claims["pod"] = {"name": ref_name, "uid": uid}
            node_name = spec.get("nodeName")
            if node_name and self.faults.token_node_info:
                claims["node"] = {"name": node_name}  # the uid only if the Node exists
                try:
                    claims["node"]["uid"] = self.store.get("nodes", None, node_name)[
                        "metadata"]["uid"]
                except ApiError:
                    pass
        elif group == "" and kind == "Node":
            raise ApiError(400, "BadRequest", 'cannot bind token to a Node object as the '
                           '"ServiceAccountTokenNodeBinding" feature-gate is disabled')
        elif group == "" and kind == "Secret":
            uid = self.store.get("secrets", ns, ref_name)["metadata"]["uid"]
            claims["secret"] = {"name": ref_name, "uid": uid}
        else:
            raise ApiError(400, "BadRequest", "cannot bind token to object of type %s/%s, "
                           "Kind=%s" % (group, version, kind))
        if ref.get("uid") and ref["uid"] != uid:
            raise conflict(kind, ref_name, group, "the UID in the bound object reference (%s) "
                           "does not match the UID in record. The object might have been "
                           "deleted and then recreated" % ref["uid"])
        return claims

    def sign(self, claims):
        header = json.dumps({"alg": "HS256", "kid": KEY_ID}, separators=(",", ":"))
        payload = json.dumps(claims, sort_keys=True, separators=(",", ":"))
        signed = _b64(header.encode()) + "." + _b64(payload.encode())
        return signed + "." + _b64(hmac.new(self.key, signed.encode(), hashlib.sha256).digest())

    # --- TokenReview ---------------------------------------------------------------------
    def review(self, body):
        meta, spec = _decode(body, "TokenReview")
        token, audiences = spec.get("token"), spec.get("audiences")
        if token is not None and not isinstance(token, str):
            raise _cannot_decode("TokenReview", "spec.token must be a string")
        if not token:
            raise ApiError(400, "BadRequest", "token is required for TokenReview in "
                           "authentication")
        try:
            user, matched = self.authenticate(token, audiences or [API_AUDIENCE])
            status = {"authenticated": True, "user": user, "audiences": matched}
        except Rejected as e:
            status = {"user": {}, "error": str(e)}
        meta.setdefault("creationTimestamp", None)
        echoed = {"token": token}
        if audiences:
            echoed["audiences"] = audiences
        return {"kind": "TokenReview", "apiVersion": API_VERSION, "metadata": meta,
                "spec": echoed, "status": status}

    def authenticate(self, token, wanted):
        """(user info, audiences) of a valid token; Rejected otherwise."""
        parts = token.split(".")
        try:
            if len(parts) != 3:
                raise ValueError("not a compact JWS")
            header, payload = json.loads(_unb64(parts[0])), json.loads(_unb64(parts[1]))
            signature = _unb64(parts[2])
        except ValueError:
            raise Rejected(INVALID)
        if not isinstance(payload, dict) or payload.get("iss") != ISSUER or \
                not isinstance(header, dict):
            raise Rejected(INVALID)  # no authenticator takes it up
        # Past this point the ServiceAccount authenticator says why it refuses; the error
        # also carries the loopback token authenticator's refusal, as the real one does.
        expected = hmac.new(self.key, (parts[0] + "." + parts[1]).encode(),
                            hashlib.sha256).digest()
        if header.get("alg") != "HS256" or not hmac.compare_digest(expected, signature):
            raise Rejected("[%s, %s]" % (INVALID, CRYPTO_FAILURE))
        try:
            return self._validate(payload, wanted)
        except Rejected as e:
            raise Rejected("[%s, %s]" % (INVALID, e))

    def _validate(self, claims, wanted):
        """The checks of a signed token's claims (jwt.go's audiences, then claims.go)."""
        token_audiences = claims.get("aud") or [API_AUDIENCE]
        if isinstance(token_audiences, str):
            token_audiences = [token_audiences]
        matched = [a for a in wanted if a in token_audiences]
        if not matched:
            raise Rejected("token audiences %s is invalid for the target audiences %s"
                           % (_go_quoted(token_audiences), _go_quoted(wanted)))
        now = time.time()
        if now + LEEWAY < claims.get("nbf", 0):
            raise Rejected("service account token is not valid yet")
        if "exp" in claims and now - LEEWAY > claims["exp"]:
            raise Rejected("service account token has expired")
        if now + LEEWAY < claims.get("iat", 0):
            raise Rejected("service account token is issued in the future")
        private = claims.get("kubernetes.io") or {}
        ns, account = private.get("namespace", ""), private.get("serviceaccount") or {}
        try:
            current = self.store.get("serviceaccounts", ns, account.get("name", ""))
        except ApiError as e:
            raise Rejected(e.message)
        if current["metadata"]["uid"] != account.get("uid"):
            raise Rejected("service account UID (%s) does not match claim (%s)"
                           % (current["metadata"]["uid"], account.get("uid")))
        if _deleted_before(current, now - LEEWAY):
            raise Rejected("service account %s/%s has been deleted" % (ns, account.get("name")))
        for resource, key in (("secrets", "secret"), ("pods", "pod")):
            ref = private.get(key)
            if ref is None:
                continue
            try:
                bound = self.store.get(resource, ns, ref.get("name", ""))
            except ApiError:
                raise Rejected("service account token has been invalidated")
            if bound["metadata"]["uid"] != ref.get("uid"):
                raise Rejected("%s UID (%s) does not match service account %s ref claim (%s)"
                               % (key, bound["metadata"]["uid"], key, ref.get("uid")))
            if _deleted_before(bound, now - LEEWAY):
                raise Rejected("service account token has been invalidated")
        user = {"username": "system:serviceaccount:%s:%s" % (ns, account.get("name")),
                "uid": account.get("uid"),
                "groups": ["system:serviceaccounts", "system:serviceaccounts:" + ns,
                           "system:authenticated"]}
        extra, pod, node = {}, private.get("pod") or {}, private.get("node") or {}
        if pod.get("name") and pod.get("uid"):
            extra[EXTRA + "pod-name"], extra[EXTRA + "pod-uid"] = [pod["name"]], [pod["uid"]]
        if claims.get("jti"):
            extra[EXTRA + "credential-id"] = ["JTI=" + claims["jti"]]
        if pod and node.get("name") and self.faults.token_node_info:
            extra[EXTRA + "node-name"] = [node["name"]]
            if node.get("uid"):
                extra[EXTRA + "node-uid"] = [node["uid"]]
        if extra:
            user["extra"] = extra
        return user, matched
