"""The Status objects kube-apiserver fails a request with, and the failure a test injects
through /_admin/fail: each injected code is answered with the reason, message and details
the real server gives that code, so a client meets what it would meet in a cluster.

The constructors follow the like-named ones of k8s.io/apimachinery pkg/api/errors/errors.go
(kubernetes/kubernetes staging/src/k8s.io/apimachinery/pkg/api/errors/errors.go); where the
server builds a message around one, the file and function that do are named beside it. A
Status whose details carry retryAfterSeconds > 0 goes out with a Retry-After header of those
seconds (store.ApiError, as responsewriters.ErrorNegotiated writes errors)."""

import json

from routes import parse_route
from store import ApiError, conflict, expired, plural

INJECTED = "injected failure"
NOT_SERVED = "the server could not find the requested resource"
# The user an injected refusal names: the stand-in authenticates no one by name.
TEST_USER = "system:serviceaccount:default:test-client"


def _qualified(route):
    """schema.GroupResource.String(): "resource.group", or "resource" in the core group."""
    resource = plural(route.resource)
    return resource + "." + route.group if route.group else resource


def verb(method, route, query):
    """The authorization verb of a request, as request.RequestInfoFactory.NewRequestInfo
    (apiserver/pkg/endpoints/request/requestinfo.go) derives it: a GET without a name is a
    list (or a watch with watch=true), a DELETE without one a deletecollection; a path that
    is no resource takes the method's name."""
    if route is None:
        return method.lower()
    named = route.name is not None
    if method == "GET":
        if query.get("watch") in ("1", "t", "T", "true", "TRUE", "True"):
            return "watch"
        return "get" if named else "list"
    if method == "DELETE" and not named:
        return "deletecollection"
    return {"POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}.get(
        method, method.lower())


def bad_request(message):
    """errors.NewBadRequest: 400 BadRequest, no details."""
    return ApiError(400, "BadRequest", message)


def unauthorized():
    """401 as the authentication filter answers it (apiserver/pkg/endpoints/filters/
    authentication.go, Unauthorized: errors.NewUnauthorized("Unauthorized"))."""
    return ApiError(401, "Unauthorized", "Unauthorized")


def forbidden(route, verb_, path, why=""):
    """403 as the authorization filter answers a denial (apiserver/pkg/endpoints/handlers/
    responsewriters/errors.go, Forbidden and forbiddenMessage, wrapped in
    errors.NewForbidden): who cannot do what to which resource, then the authorizer's
    reason; details name the group, the resource (as kind) and the object."""
    if route is None:
        text = 'User "%s" cannot %s path "%s"' % (TEST_USER, verb_, path)
        message = "forbidden: " + text
        details = {}
    else:
        resource = plural(route.resource) + ("/" + route.sub if route.sub else "")
        scope = 'in the namespace "%s"' % route.ns if route.ns else "at the cluster scope"
        text = 'User "%s" cannot %s resource "%s" in API group "%s" %s' % (
            TEST_USER, verb_, resource, route.group, scope)
        name = route.name or ""
        subject = '%s "%s"' % (_qualified(route), name) if name else _qualified(route)
        message = "%s is forbidden: %s" % (subject, text)
        details = {"name": name, "group": route.group, "kind": plural(route.resource)}
    if why:
        message += ": " + why
    return ApiError(403, "Forbidden", message, details)


def not_served():
    """404 for a path nothing serves (a group or resource not installed): this stand-in's
    answer to a route it does not know, naming no object. kube-apiserver itself ends such a
    path in net/http's plain-text "404 page not found" (apiserver/pkg/util/notfoundhandler/
    not_found_handler.go); the message here is what client-go makes of that answer
    (errors.NewGenericServerResponse), so clients read both alike: a 404 without details."""
    return ApiError(404, "NotFound", NOT_SERVED)


def method_not_supported(route, verb_):
    """errors.NewMethodNotSupported: 405 MethodNotAllowed, details the group and resource."""
    resource = _qualified(route) if route is not None else ""
    details = {"group": route.group, "kind": plural(route.resource)} if route is not None else {}
    return ApiError(405, "MethodNotAllowed", '%s is not supported on resources of kind "%s"'
                    % (verb_, resource), details)


def already_exists(route, name):
    """errors.NewAlreadyExists: 409 AlreadyExists, what a create of a taken name gets."""
    return ApiError(409, "AlreadyExists", '%s "%s" already exists' % (_qualified(route), name),
                    {"name": name, "group": route.group, "kind": plural(route.resource)})


# errors.NewResourceExpired: 410 Expired, no details (store.expired, which the store's own
# continue tokens answer with). Every kube-apiserver from 1.18 answers a too-old
# resourceVersion so (client-go tools/cache/reflector.go, isExpiredError).
resource_expired = expired


def gone(message):
    """errors.NewGone: 410 Gone, no details: what the watch cache of kube-apiserver 1.17 and
    earlier answered a too-old resourceVersion with (apiserver/pkg/storage/cacher/
    watch_cache.go, GetAllEventsSinceThreadUnsafe), which is why client-go's reflector takes
    both reasons as "relist" (isExpiredError)."""
    return ApiError(410, "Gone", message)


def too_old_message(verb_):
    """The message the etcd3 store gives a compacted revision (apiserver/pkg/storage/etcd3/
    errors.go: interpretWatchError for a watch, the `expired` text for a list)."""
    what = "watch" if verb_ == "watch" else "list"
    return "The resourceVersion for the provided %s is too old." % what


def request_entity_too_large(message):
    """errors.NewRequestEntityTooLargeError: 413 RequestEntityTooLarge, no details."""
    return ApiError(413, "RequestEntityTooLarge", "Request entity too large: " + message)


def unsupported_media_type():
    """415 as the request decoder refuses a body it cannot read (apiserver/pkg/endpoints/
    handlers/negotiation/errors.go, NewUnsupportedMediaTypeError): reason
    UnsupportedMediaType, the media types it takes in the message."""
    return ApiError(415, "UnsupportedMediaType", "the body of the request was in an unknown "
                    "format - accepted media types include: application/json, application/yaml")


def invalid(route, name, field, detail):
    """errors.NewInvalid: 422 Invalid, one cause per field error ("reason" is the cause
    type, field.ErrorTypeInvalid here) and details naming the kind and object."""
    kind = route.kind if route is not None else ""
    group = route.group if route is not None else ""
    qualified = kind + ("." + group if group else "")
    return ApiError(422, "Invalid", '%s "%s" is invalid: %s: Invalid value: %s'
                    % (qualified, name, field, detail),
                    {"name": name, "group": group, "kind": kind,
                     "causes": [{"reason": "FieldValueInvalid",
                                 "message": "Invalid value: " + detail, "field": field}]})


def too_many_requests(message, retry_after):
    """errors.NewTooManyRequests: 429 TooManyRequests; details always present, carrying
    retryAfterSeconds when the server names a wait (then also the Retry-After header).
    The pod eviction subresource answers so for a PodDisruptionBudget (pkg/registry/core/
    pod/storage/eviction.go, checkAndDecrement). The load-shedding filters' 429 is plain
    text instead (apiserver.py, send_throttled)."""
    return ApiError(429, "TooManyRequests", message, {"retryAfterSeconds": retry_after})


def internal_error(message):
    """errors.NewInternalError: 500 InternalError, the error's text as the one cause."""
    return ApiError(500, "InternalError", "Internal error occurred: " + message,
                    {"causes": [{"message": message}]})


def server_timeout(route, operation, retry_after):
    """errors.NewServerTimeout: 500 ServerTimeout (a 500, not a 504), details naming the
    resource and the operation, and the wait."""
    resource = _qualified(route) if route is not None else ""
    details = {"name": operation, "group": route.group if route is not None else "",
               "kind": plural(route.resource) if route is not None else "",
               "retryAfterSeconds": retry_after}
    return ApiError(500, "ServerTimeout", "The %s operation against %s could not be completed "
                    "at this time, please try again." % (operation, resource), details)


def service_unavailable(message, retry_after):
    """errors.NewServiceUnavailable: 503 ServiceUnavailable, no details. With a wait, the
    answer of a server still installing its paths (apiserver/pkg/util/notfoundhandler/
    not_found_handler.go: details.retryAfterSeconds 5, hence Retry-After: 5)."""
    if retry_after > 0:
        return ApiError(503, "ServiceUnavailable", "the request has been made before all known "
                        "HTTP paths have been installed, please try again",
                        {"retryAfterSeconds": retry_after})
    return ApiError(503, "ServiceUnavailable", message)


def timeout(message, retry_after):
    """errors.NewTimeoutError: 504 Timeout, "Timeout: " and the message; details always
    present. The request timeout (apiserver/pkg/endpoints/handlers/finisher/finisher.go,
    FinishRequest) names no wait; a watch from a resourceVersion the server has not reached
    names 1 (apiserver/pkg/storage/errors.go, NewTooLargeResourceVersionError)."""
    return ApiError(504, "Timeout", "Timeout: " + message, {"retryAfterSeconds": retry_after})


def unknown(code, message):
    """A Status with reason Unknown, which metav1 spells as no reason at all
    (apimachinery pkg/apis/meta/v1/types.go, StatusReasonUnknown = ""): how the server
    passes on a code only a webhook chose (apiserver/pkg/admission/plugin/webhook/errors/
    statuserror.go, ToStatusErr) and how it answers an error it cannot classify
    (responsewriters/status.go, ErrorToAPIStatus)."""
    return ApiError(code, "", message)


def _object_name(route, raw):
    """The name a request is about: the path's, or a create's metadata.name."""
    if route is not None and route.name is not None:
        return route.name
    try:
        body = json.loads(raw or b"null")
        name = body.get("metadata", {}).get("name") if isinstance(body, dict) else None
    except (ValueError, AttributeError):
        name = None
    return name if isinstance(name, str) and name else "injected"


def injected(fault, method, path, query, raw=b""):
    """The ApiError an armed /_admin/fail answers a request with. fault: (code, reason,
    retry_after); reason picks between the reasons one code has (410: Expired or Gone, 500:
    InternalError or ServerTimeout), retry_after (seconds) is the wait the codes that name
    one carry (429, 500 ServerTimeout, 503, 504). raw: the request's body."""
    code, reason, retry_after = fault
    route = parse_route(path)
    verb_ = verb(method, route, query)
    name = _object_name(route, raw)
    if code == 400:
        return bad_request(INJECTED)
    if code == 401:
        return unauthorized()
    if code == 403:
        return forbidden(route, verb_, path, INJECTED)
    if code == 404:
        return not_served()
    if code == 405:
        return method_not_supported(route, verb_)
    if code == 409 and route is not None:
        # A create meets a name already taken, any other write a stale resourceVersion.
        if method == "POST" and route.sub is None:
            return already_exists(route, name)
        return conflict(route.resource, name, route.group)
    if code == 409:
        return ApiError(409, "Conflict", INJECTED)
    if code == 410:
        return (gone if reason == "Gone" else resource_expired)(too_old_message(verb_))
    if code == 413:
        return request_entity_too_large(INJECTED)
    if code == 415:
        return unsupported_media_type()
    if code == 422:
        return invalid(route, name, "metadata.name", '"%s": %s' % (name, INJECTED))
    if code == 429:
        return too_many_requests(INJECTED, retry_after)
    if code == 500:
        if reason == "ServerTimeout":
            return server_timeout(route, verb_, retry_after)
        return internal_error(INJECTED)
    if code == 503:
        return service_unavailable(INJECTED, retry_after)
    if code == 504:
        return timeout("request did not complete within requested timeout - " + INJECTED,
                       retry_after)
    return unknown(code, INJECTED)
