"""Admission of pod creations, in kube-apiserver's order: the built-in Priority plugin, then
the mutating admission webhooks that MutatingWebhookConfigurations register, with one
reinvocation round for webhooks whose reinvocationPolicy is IfNeeded. Calling one webhook
over HTTPS with an admission.k8s.io AdmissionReview is webhook_call.py's.

Modelled on k8s.io/apiserver's pkg/admission/plugin/webhook (mutating/dispatcher.go,
generic/webhook.go, predicates/) and pkg/admission/reinvocation.go."""

import copy
import threading

from kselectors import label_selector_matches
from statuses import internal_error
from store import NAMESPACE_NAME_LABEL, ApiError, default_pod
from webhook_call import CallError, WebhookCaller, canonical


def forbidden(pod, message):
    """admission.NewForbidden for a pod not yet named: its name, else its generateName."""
    meta = pod.get("metadata") or {}
    name = meta.get("name") or meta.get("generateName") or "Unknown"
    return ApiError(403, "Forbidden", 'pods "%s" is forbidden: %s' % (name, message),
                    {"name": name, "kind": "pods"})


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


class Admission(WebhookCaller):
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
            before = canonical(pod)
            pod = self.priority(pod)
            if canonical(pod) != before:
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
