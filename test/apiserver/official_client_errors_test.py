#!/usr/bin/python3
"""The failures /_admin/fail injects, checked against what kube-apiserver answers each code
with: the HTTP code, the Status reason (an Unknown reason is no reason at all), the message's
shape, the details, and Retry-After exactly when details.retryAfterSeconds asks for a wait.
The expectations are written out here from the real server's sources, not read back from
the stand-in; the official Kubernetes Python client reads a few of them as its users do."""

import json
import unittest
import urllib.error
import urllib.request

from kubernetes import watch
from kubernetes.client.rest import ApiException

from client_helpers import TOKEN, ServerTestCase, pod

PODS = "/api/v1/namespaces/errors/pods"
APPS = "/apis/sparkoperator.k8s.io/v1beta2/namespaces/errors/sparkapplications"

# code -> (reason or None for Unknown, the message or its start, details), as kube-apiserver
# words a failure with that code. k8s.io/apimachinery pkg/api/errors/errors.go unless noted.
EXPECTED = {
    400: ("BadRequest", "injected failure", None),                        # NewBadRequest
    # apiserver/pkg/endpoints/filters/authentication.go, Unauthorized.
    401: ("Unauthorized", "Unauthorized", None),
    # apiserver/pkg/endpoints/handlers/responsewriters/errors.go, Forbidden (NewForbidden).
    403: ("Forbidden", 'pods is forbidden: User "', {"kind": "pods"}),
    # A path nothing serves names no object.
    404: ("NotFound", "the server could not find the requested resource", None),
    405: ("MethodNotAllowed", 'create is not supported on resources of kind "pods"',
          {"kind": "pods"}),                                              # NewMethodNotSupported
    409: ("AlreadyExists", 'pods "e1" already exists',
          {"name": "e1", "kind": "pods"}),                                # NewAlreadyExists
    # NewResourceExpired; apiserver/pkg/storage/etcd3/errors.go words a compacted revision.
    410: ("Expired", "The resourceVersion for the provided list is too old.", None),
    413: ("RequestEntityTooLarge", "Request entity too large: ", None),
    # apiserver/pkg/endpoints/handlers/negotiation/errors.go, NewUnsupportedMediaTypeError.
    415: ("UnsupportedMediaType", "the body of the request was in an unknown format", None),
    422: ("Invalid", 'Pod "e1" is invalid: metadata.name: Invalid value: ', None),  # NewInvalid
    429: ("TooManyRequests", "injected failure", {}),                     # NewTooManyRequests
    500: ("InternalError", "Internal error occurred: injected failure",
          {"causes": [{"message": "injected failure"}]}),                 # NewInternalError
    503: ("ServiceUnavailable", "injected failure", None),                # NewServiceUnavailable
    504: ("Timeout", "Timeout: ", {}),                                    # NewTimeoutError
    # StatusReasonUnknown is "" (apimachinery pkg/apis/meta/v1/types.go): no reason at all,
    # as a webhook's own code is passed on (admission webhook errors, ToStatusErr).
    418: (None, "injected failure", None),
    502: (None, "injected failure", None),
}


def admin(port, what, **query):
    url = "http://127.0.0.1:%d/_admin/%s?%s" % (
        port, what, "&".join("%s=%s" % (k.replace("_", "-"), v) for k, v in query.items()))
    urllib.request.urlopen(urllib.request.Request(url, method="POST"), timeout=10).read()


def raw_request(port, method, path, body=None):
    """(code, headers, parsed body) of one request, errors included."""
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request("http://127.0.0.1:%d%s" % (port, path), data=data,
                                 method=method, headers={"Authorization": "Bearer " + TOKEN,
                                                         "Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return resp.status, resp.headers, json.loads(resp.read())
    except urllib.error.HTTPError as e:
        return e.code, e.headers, json.loads(e.read())


class InjectedErrorsTest(ServerTestCase):
    def fail_next(self, code, method="POST", prefix=PODS, **extra):
        admin(self.port, "fail", code=code, method=method, prefix=prefix, count=1, **extra)

    def test_each_code_is_worded_as_kube_apiserver_words_it(self):
        for code, (reason, message, details) in EXPECTED.items():
            with self.subTest(code=code):
                self.fail_next(code)
                got, headers, status = raw_request(self.port, "POST", PODS,
                                                   {"metadata": {"name": "e1"}})
                self.assertEqual(got, code)
                self.assertEqual((status["kind"], status["apiVersion"], status["status"],
                                  status["code"]), ("Status", "v1", "Failure", code))
                self.assertEqual(status.get("reason"), reason, status)
                self.assertTrue(status["message"].startswith(message), status)
                if details is not None:
                    self.assertEqual(status.get("details"), details, status)
                self.assertIsNone(headers.get("Retry-After"), "no wait was asked for")

    def test_a_wait_named_in_details_is_also_sent_as_retry_after(self):
        for code in (429, 503, 504):
            with self.subTest(code=code):
                self.fail_next(code, retry_after=3)
                got, headers, status = raw_request(self.port, "POST", PODS, {})
                self.assertEqual(got, code)
                self.assertEqual(status["details"]["retryAfterSeconds"], 3)
                self.assertEqual(headers.get("Retry-After"), "3")
        # NotFoundHandler's answer while a starting server installs its paths.
        self.fail_next(503, retry_after=5)
        _, _, status = raw_request(self.port, "POST", PODS, {})
        self.assertTrue(status["message"].startswith("the request has been made before all "
                                                     "known HTTP paths have been installed"))

    def test_a_code_with_two_reasons_takes_the_one_asked_for(self):
        # NewGone: kube-apiserver 1.17 and earlier answered a too-old watch with Gone.
        self.fail_next(410, method="GET", reason="Gone")
        got, _, status = raw_request(self.port, "GET", PODS + "?watch=true&resourceVersion=1")
        self.assertEqual((got, status["reason"], status["message"]),
                         (410, "Gone", "The resourceVersion for the provided watch is too old."))
        # NewServerTimeout is a 500 naming the operation, the resource and the wait.
        self.fail_next(500, prefix=APPS, reason="ServerTimeout", retry_after=2)
        got, headers, status = raw_request(self.port, "POST", APPS, {})
        self.assertEqual((got, status["reason"], headers.get("Retry-After")),
                         (500, "ServerTimeout", "2"))
        self.assertEqual(status["details"], {"name": "create", "group": "sparkoperator.k8s.io",
                                             "kind": "sparkapplications",
                                             "retryAfterSeconds": 2})
        self.assertEqual(status["message"], "The create operation against sparkapplications."
                         "sparkoperator.k8s.io could not be completed at this time, please "
                         "try again.")

    def test_a_write_other_than_a_create_conflicts_rather_than_exists(self):
        self.core.create_namespaced_pod("errors", pod("c1"))
        self.fail_next(409, method="PATCH")
        with self.assertRaises(ApiException) as refused:
            self.core.patch_namespaced_pod("c1", "errors", {"metadata": {"labels": {"a": "b"}}})
        status = json.loads(refused.exception.body)
        self.assertEqual((refused.exception.status, status["reason"]), (409, "Conflict"))
        self.assertTrue(status["message"].startswith('Operation cannot be fulfilled on pods "c1"'))

    def test_the_official_client_reads_them(self):
        # 503 with a wait: ApiException carries the code, Go's reason phrase, the header and
        # the Status body.
        self.fail_next(503, retry_after=5)
        with self.assertRaises(ApiException) as unavailable:
            self.core.create_namespaced_pod("errors", pod("o1"))
        e = unavailable.exception
        self.assertEqual((e.status, e.reason), (503, "Service Unavailable"))
        self.assertEqual(e.headers.get("Retry-After"), "5")
        self.assertEqual(json.loads(e.body)["reason"], "ServiceUnavailable")
        # 403 from the authorization filter.
        self.fail_next(403, method="GET", prefix="/api/v1/namespaces/errors/pods/o2")
        with self.assertRaises(ApiException) as denied:
            self.core.read_namespaced_pod("o2", "errors")
        status = json.loads(denied.exception.body)
        self.assertEqual((denied.exception.status, status["reason"]), (403, "Forbidden"))
        self.assertEqual(status["details"], {"name": "o2", "kind": "pods"})
        self.assertRegex(status["message"], r'^pods "o2" is forbidden: User "[^"]+" cannot get '
                         r'resource "pods" in API group "" in the namespace "errors"')

    def test_the_official_watch_sees_a_gone_watch_as_an_error_event(self):
        # A watch from a too-old resourceVersion, as kube-apiserver 1.17 and earlier ended it:
        # an ERROR event with a 410 Gone Status, which the client's watch raises.
        admin(self.port, "expire-next-watch", reason="Gone")
        w = watch.Watch()
        with self.assertRaises(ApiException) as expired:
            for _ in w.stream(self.core.list_namespaced_pod, "errors", resource_version="1",
                              timeout_seconds=5):
                pass
        self.assertEqual(expired.exception.status, 410)
        self.assertIn("Gone", expired.exception.reason)


if __name__ == "__main__":
    unittest.main(verbosity=2)
