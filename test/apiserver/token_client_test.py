#!/usr/bin/python3
"""Drives the test API server's ServiceAccount token routes (the token subresource and
TokenReviews) with the official Kubernetes Python client: bound tokens as a node agent's
pod gets them, and reviews as gleaner-scheduler asks for them."""

import base64
import json
import sys
import time
import unittest
import uuid

from kubernetes import client
from kubernetes.client.rest import ApiException

from client_helpers import ServerTestCase

API_AUDIENCE = "https://kubernetes.default.svc.cluster.local"
AUDIENCE = "gleaner-scheduler"
EXTRA = "authentication.kubernetes.io/"


def decode_part(part):
    return json.loads(base64.urlsafe_b64decode(part + "=" * (-len(part) % 4)))


def encode_part(value):
    return base64.urlsafe_b64encode(json.dumps(value).encode()).rstrip(b"=").decode()


class TokenClientTest(ServerTestCase):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.authn = client.AuthenticationV1Api(cls.api)
        cls.node = cls.core.create_node(client.V1Node(metadata=client.V1ObjectMeta(
            name="node-a")))

    # --- helpers ---------------------------------------------------------------------------
    def agent(self, ns, pod_name="agent-pod", account="agent", node="node-a"):
        """A ServiceAccount and a pod running as it on `node`: (account, pod)."""
        try:
            sa = self.core.read_namespaced_service_account(account, ns)
        except ApiException:
            sa = self.core.create_namespaced_service_account(ns, client.V1ServiceAccount(
                metadata=client.V1ObjectMeta(name=account)))
        pod = self.core.create_namespaced_pod(ns, client.V1Pod(
            metadata=client.V1ObjectMeta(name=pod_name),
            spec=client.V1PodSpec(node_name=node, service_account_name=account,
                                  containers=[client.V1Container(name="agent",
                                                                 image="busybox")])))
        return sa, pod

    def token(self, ns, account, audiences=(AUDIENCE,), pod=None, secret=None, **spec):
        ref = None
        if pod is not None:
            ref = client.V1BoundObjectReference(kind="Pod", api_version="v1",
                                                name=pod.metadata.name, uid=pod.metadata.uid)
        if secret is not None:
            ref = client.V1BoundObjectReference(kind="Secret", api_version="v1",
                                                name=secret.metadata.name)
        return self.core.create_namespaced_service_account_token(
            account, ns, client.AuthenticationV1TokenRequest(spec=client.V1TokenRequestSpec(
                audiences=list(audiences), bound_object_ref=ref, **spec)))

    def review(self, token, audiences=(AUDIENCE,)):
        return self.authn.create_token_review(client.V1TokenReview(
            spec=client.V1TokenReviewSpec(token=token, audiences=list(audiences) or None)))

    def assert_refused(self, review, why):
        self.assertFalse(review.status.authenticated)
        self.assertIsNone(review.status.user.username)
        self.assertIn(why, review.status.error)

    def node_info(self, on):
        _, status, _ = self.api.call_api("/_admin/token-node-info", "POST",
                                         query_params=[("on", "true" if on else "false")])
        self.assertEqual(status, 200)

    # --- tests -----------------------------------------------------------------------------
    def test_pod_bound_token_has_the_claims_of_a_projected_token(self):
        sa, pod = self.agent("claims")
        before = int(time.time())
        issued = self.token("claims", "agent", pod=pod)
        self.assertEqual(issued.metadata.name, "agent")
        self.assertEqual(issued.metadata.namespace, "claims")
        self.assertEqual(issued.spec.audiences, [AUDIENCE])
        self.assertEqual(issued.spec.expiration_seconds, 3600)
        self.assertEqual(issued.spec.bound_object_ref.name, "agent-pod")
        parts = issued.status.token.split(".")
        self.assertEqual(len(parts), 3)
        self.assertNotIn("=", issued.status.token)
        self.assertEqual(decode_part(parts[0]), {"alg": "HS256", "kid": "gleaner-test-apiserver"})
        claims = decode_part(parts[1])
        self.assertEqual(sorted(claims), ["aud", "exp", "iat", "iss", "jti", "kubernetes.io",
                                          "nbf", "sub"])
        self.assertEqual(claims["aud"], [AUDIENCE])
        self.assertEqual(claims["iss"], API_AUDIENCE)
        self.assertEqual(claims["sub"], "system:serviceaccount:claims:agent")
        self.assertEqual(uuid.UUID(claims["jti"]).version, 4)
        self.assertTrue(all(isinstance(claims[k], int) for k in ("exp", "iat", "nbf")))
        self.assertGreaterEqual(claims["iat"], before)
        self.assertEqual(claims["nbf"], claims["iat"])
        self.assertEqual(claims["exp"] - claims["iat"], 3600)
        self.assertEqual(int(issued.status.expiration_timestamp.timestamp()), claims["exp"])
        self.assertEqual(claims["kubernetes.io"], {
            "namespace": "claims",
            "serviceaccount": {"name": "agent", "uid": sa.metadata.uid},
            "pod": {"name": "agent-pod", "uid": pod.metadata.uid},
            "node": {"name": "node-a", "uid": self.node.metadata.uid}})

    def test_review_vouches_for_the_agent_and_its_node(self):
        sa, pod = self.agent("valid")
        token = self.token("valid", "agent", pod=pod).status.token
        review = self.review(token)
        self.assertTrue(review.status.authenticated)
        self.assertIsNone(review.status.error)
        self.assertEqual(review.status.audiences, [AUDIENCE])
        user = review.status.user
        self.assertEqual(user.username, "system:serviceaccount:valid:agent")
        self.assertEqual(user.uid, sa.metadata.uid)
        self.assertEqual(user.groups, ["system:serviceaccounts", "system:serviceaccounts:valid",
                                       "system:authenticated"])
        self.assertEqual(user.extra, {
            EXTRA + "pod-name": ["agent-pod"], EXTRA + "pod-uid": [pod.metadata.uid],
            EXTRA + "node-name": ["node-a"], EXTRA + "node-uid": [self.node.metadata.uid],
            EXTRA + "credential-id": ["JTI=" + decode_part(token.split(".")[1])["jti"]]})

    def test_audiences_must_meet(self):
        _, pod = self.agent("audiences")
        token = self.token("audiences", "agent", pod=pod).status.token
        self.assert_refused(self.review(token, ["someone-else"]),
                            'token audiences ["gleaner-scheduler"] is invalid for the target '
                            'audiences ["someone-else"]')
        # No audiences in the review: the API server's own, which this token is not for.
        self.assert_refused(self.review(token, ()), "is invalid for the target audiences")
        both = self.review(token, ["someone-else", AUDIENCE])
        self.assertTrue(both.status.authenticated)
        self.assertEqual(both.status.audiences, [AUDIENCE])
        # A token asked for without audiences is for the API server.
        default = self.token("audiences", "agent", audiences=(), pod=pod)
        self.assertEqual(default.spec.audiences, [API_AUDIENCE])
        self.assertEqual(self.review(default.status.token, ()).status.audiences, [API_AUDIENCE])

    def test_token_of_a_deleted_pod_is_refused(self):
        _, pod = self.agent("deleted")
        token = self.token("deleted", "agent", pod=pod).status.token
        self.assertTrue(self.review(token).status.authenticated)
        self.core.delete_namespaced_pod("agent-pod", "deleted")
        self.assert_refused(self.review(token), "service account token has been invalidated")
        # A new pod of the same name is another pod.
        _, again = self.agent("deleted")
        self.assert_refused(self.review(token), "pod UID (%s) does not match service account "
                            "pod ref claim (%s)" % (again.metadata.uid, pod.metadata.uid))

    def test_token_of_a_recreated_service_account_is_refused(self):
        _, pod = self.agent("recreated")
        token = self.token("recreated", "agent", pod=pod).status.token
        self.core.delete_namespaced_service_account("agent", "recreated")
        self.assert_refused(self.review(token), 'serviceaccounts "agent" not found')
        self.core.create_namespaced_service_account("recreated", client.V1ServiceAccount(
            metadata=client.V1ObjectMeta(name="agent")))
        self.assert_refused(self.review(token), "service account UID")

    def test_tampered_token_is_refused(self):
        _, pod = self.agent("tampered")
        token = self.token("tampered", "agent", pod=pod).status.token
        self.assertTrue(self.review(token).status.authenticated)
        header, payload, signature = token.split(".")
        claims = decode_part(payload)
        claims["kubernetes.io"]["node"]["name"] = "node-b"  # as if the agent ran elsewhere
        forged = ".".join([header, encode_part(claims), signature])
        self.assert_refused(self.review(forged), "error in cryptographic primitive")
        claims = decode_part(payload)
        claims["exp"] += 3600  # a longer life
        self.assert_refused(self.review(".".join([header, encode_part(claims), signature])),
                            "error in cryptographic primitive")
        self.assert_refused(self.review("not-a-jwt"), "invalid bearer token")

    def test_expiration_below_ten_minutes_is_invalid(self):
        _, pod = self.agent("expiry")
        with self.assertRaises(ApiException) as short:
            self.token("expiry", "agent", pod=pod, expiration_seconds=599)
        self.assertEqual(short.exception.status, 422)
        body = json.loads(short.exception.body)
        self.assertEqual(body["reason"], "Invalid")
        self.assertEqual(body["message"], 'TokenRequest.authentication.k8s.io "" is invalid: '
                         "spec.expirationSeconds: Invalid value: 599: may not specify a "
                         "duration less than 10 minutes")
        issued = self.token("expiry", "agent", pod=pod, expiration_seconds=600)
        claims = decode_part(issued.status.token.split(".")[1])
        self.assertEqual(claims["exp"] - claims["iat"], 600)

    def test_without_node_info_tokens_and_reviews_name_no_node(self):
        self.addCleanup(self.node_info, True)
        self.node_info(False)
        _, pod = self.agent("old-cluster")
        token = self.token("old-cluster", "agent", pod=pod).status.token
        self.assertNotIn("node", decode_part(token.split(".")[1])["kubernetes.io"])
        extra = self.review(token).status.user.extra
        self.assertEqual(extra[EXTRA + "pod-name"], ["agent-pod"])
        self.assertNotIn(EXTRA + "node-name", extra)
        self.assertNotIn(EXTRA + "node-uid", extra)
        self.node_info(True)
        newer = self.token("old-cluster", "agent", pod=pod).status.token
        self.assertEqual(self.review(newer).status.user.extra[EXTRA + "node-name"], ["node-a"])

    def test_node_without_a_node_object_has_no_uid(self):
        _, pod = self.agent("nodeless", node="node-gone")
        token = self.token("nodeless", "agent", pod=pod).status.token
        self.assertEqual(decode_part(token.split(".")[1])["kubernetes.io"]["node"],
                         {"name": "node-gone"})
        extra = self.review(token).status.user.extra
        self.assertEqual(extra[EXTRA + "node-name"], ["node-gone"])
        self.assertNotIn(EXTRA + "node-uid", extra)

    def test_what_cannot_be_bound(self):
        _, pod = self.agent("refusals")
        with self.assertRaises(ApiException) as ghost:
            self.token("refusals", "ghost")
        self.assertEqual(ghost.exception.status, 404)
        self.assertIn('serviceaccounts \\"ghost\\" not found', ghost.exception.body)
        pod.metadata.uid = str(uuid.uuid4())
        with self.assertRaises(ApiException) as stale:
            self.token("refusals", "agent", pod=pod)
        self.assertEqual(stale.exception.status, 409)
        self.assertIn("the UID in the bound object reference (%s) does not match the UID in "
                      "record" % pod.metadata.uid, json.loads(stale.exception.body)["message"])
        pod.metadata.name = "no-such-pod"
        with self.assertRaises(ApiException) as missing:
            self.token("refusals", "agent", pod=pod)
        self.assertEqual(missing.exception.status, 404)
        _, other = self.agent("refusals", pod_name="other-pod", account="other")
        with self.assertRaises(ApiException) as foreign:
            self.token("refusals", "agent", pod=other)
        self.assertEqual(foreign.exception.status, 400)
        self.assertIn("to pod running with different serviceaccount name",
                      json.loads(foreign.exception.body)["message"])

    def test_secret_bound_token(self):
        self.agent("secrets")
        secret = self.core.create_namespaced_secret("secrets", client.V1Secret(
            metadata=client.V1ObjectMeta(name="agent-token"), string_data={"k": "v"}))
        token = self.token("secrets", "agent", secret=secret).status.token
        self.assertEqual(decode_part(token.split(".")[1])["kubernetes.io"]["secret"],
                         {"name": "agent-token", "uid": secret.metadata.uid})
        review = self.review(token)
        self.assertTrue(review.status.authenticated)
        self.assertNotIn(EXTRA + "pod-name", review.status.user.extra)
        self.core.delete_namespaced_secret("agent-token", "secrets")
        self.assert_refused(self.review(token), "service account token has been invalidated")

    def test_token_reviews_are_create_only_and_need_the_api_token(self):
        with self.assertRaises(ApiException) as listed:
            self.api.call_api("/apis/authentication.k8s.io/v1/tokenreviews", "GET",
                              auth_settings=["BearerToken"])
        self.assertEqual(listed.exception.status, 405)
        with self.assertRaises(ApiException) as empty:
            self.review("")
        self.assertEqual(empty.exception.status, 400)
        config = client.Configuration(host=self.api.configuration.host)
        with self.assertRaises(ApiException) as denied, client.ApiClient(config) as anonymous:
            client.AuthenticationV1Api(anonymous).create_token_review(client.V1TokenReview(
                spec=client.V1TokenReviewSpec(token="x")))
        self.assertEqual(denied.exception.status, 401)


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1] + sys.argv[1:], verbosity=2)
