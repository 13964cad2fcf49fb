"""The resources the test API server serves, by API group, and how a request path maps to
one (a Route): group, resource, namespace, name and subresource, as kube-apiserver reads
them."""


# (group, resource) -> (kind, namespaced, has status subresource)
RESOURCES = {
    ("", "pods"): ("Pod", True, True),
    ("", "nodes"): ("Node", False, True),
    ("", "events"): ("Event", True, False),
    ("", "bindings"): ("Binding", True, False),
    ("sparkoperator.k8s.io", "sparkapplications"): ("SparkApplication", True, True),
    ("apps", "daemonsets"): ("DaemonSet", True, True),
    ("", "namespaces"): ("Namespace", False, True),
    ("", "secrets"): ("Secret", True, False),
    ("", "configmaps"): ("ConfigMap", True, False),
    ("admissionregistration.k8s.io", "mutatingwebhookconfigurations"):
        ("MutatingWebhookConfiguration", False, False),
    ("scheduling.k8s.io", "priorityclasses"): ("PriorityClass", False, False),
    ("scheduling.sigs.k8s.io", "elasticquotatrees"): ("ElasticQuotaTree", True, True),
    ("config.koordinator.sh", "clustercolocationprofiles"):
        ("ClusterColocationProfile", False, True),
    ("coordination.k8s.io", "leases"): ("Lease", True, False),
    ("slo.koordinator.sh", "nodemetrics"): ("NodeMetric", False, True),
    ("", "serviceaccounts"): ("ServiceAccount", True, False),
    ("authentication.k8s.io", "tokenreviews"): ("TokenReview", False, False),  # create only
    # A fleet hub's policies, under Karmada's group and ACK One Fleet's.
    ("policy.karmada.io", "propagationpolicies"): ("PropagationPolicy", True, True),
    ("policy.karmada.io", "clusterpropagationpolicies"): ("ClusterPropagationPolicy", False, True),
    ("policy.one.alibabacloud.com", "propagationpolicies"): ("PropagationPolicy", True, True),
    ("policy.one.alibabacloud.com", "clusterpropagationpolicies"):
        ("ClusterPropagationPolicy", False, True),
    # A Karmada control plane's member clusters (labels, taints).
    ("cluster.karmada.io", "clusters"): ("Cluster", False, True),
    # Karmada's binding of a resource template to member clusters (its scheduler's output).
    ("work.karmada.io", "resourcebindings"): ("ResourceBinding", True, True),
    # Kubeflow's training jobs (the training operator's CRDs).
    ("kubeflow.org", "pytorchjobs"): ("PyTorchJob", True, True),
    ("kubeflow.org", "tfjobs"): ("TFJob", True, True),
    # mpi-operator v2's CRD (mpijobs.kubeflow.org), at its own version of the group.
    ("kubeflow.org", "mpijobs"): ("MPIJob", True, True),
    # What deploy/manifests installs, so `kubectl apply -k` / `delete -k` run against it.
    ("", "services"): ("Service", True, True),
    ("apps", "deployments"): ("Deployment", True, True),
    ("rbac.authorization.k8s.io", "clusterroles"): ("ClusterRole", False, False),
    ("rbac.authorization.k8s.io", "clusterrolebindings"): ("ClusterRoleBinding", False, False),
    ("rbac.authorization.k8s.io", "roles"): ("Role", True, False),
    ("rbac.authorization.k8s.io", "rolebindings"): ("RoleBinding", True, False),
    ("apiextensions.k8s.io", "customresourcedefinitions"):
        ("CustomResourceDefinition", False, True),
}
VERSIONS = {"": "v1", "sparkoperator.k8s.io": "v1beta2", "apps": "v1",
            "admissionregistration.k8s.io": "v1", "scheduling.k8s.io": "v1",
            "scheduling.sigs.k8s.io": "v1beta1", "config.koordinator.sh": "v1alpha1",
            "coordination.k8s.io": "v1", "slo.koordinator.sh": "v1alpha1",
            "authentication.k8s.io": "v1", "policy.karmada.io": "v1alpha1",
            "policy.one.alibabacloud.com": "v1alpha1", "cluster.karmada.io": "v1alpha1",
            "work.karmada.io": "v1alpha2", "kubeflow.org": "v1",
            "rbac.authorization.k8s.io": "v1", "apiextensions.k8s.io": "v1"}
# Resources served at another version of their group than VERSIONS's: CRDs of one group
# from different operators each bring their own (kubeflow.org: the training operator's v1,
# mpi-operator's v2beta1), and kube-apiserver serves every version a CRD defines.
OTHER_VERSIONS = {("kubeflow.org", "mpijobs"): "v2beta1"}


def version_of(group, resource):
    return OTHER_VERSIONS.get((group, resource), VERSIONS[group])


def group_versions(group):
    """The versions a group serves, VERSIONS's (the preferred one: GA before beta, as
    apimachinery's version/helpers.go CompareKubeAwareVersionStrings orders them) first."""
    if group not in VERSIONS:
        return []
    others = sorted({v for (g, _), v in OTHER_VERSIONS.items() if g == group} - {VERSIONS[group]})
    return [VERSIONS[group]] + others


# Kubernetes' own API groups: they take strategic merge patches, custom resources do not.
BUILT_IN_GROUPS = {"", "apps", "admissionregistration.k8s.io", "scheduling.k8s.io",
                   "coordination.k8s.io", "authentication.k8s.io", "rbac.authorization.k8s.io",
                   "apiextensions.k8s.io"}


# Plurals that more than one group serves: stored apart, keyed plural@group.
SHARED_PLURALS = {r for g, r in RESOURCES if sum(1 for _, o in RESOURCES if o == r) > 1}


class Route:
    def __init__(self, group, resource, ns, name, sub):
        self.kind, self.namespaced, self.has_status = RESOURCES[(group, resource)]
        version = version_of(group, resource)
        if resource in SHARED_PLURALS:
            resource = resource + "@" + group  # the store's key (store.plural strips it)
        self.group, self.resource, self.ns, self.name, self.sub = group, resource, ns, name, sub
        self.api_version = (group + "/" if group else "") + version


def parse_route(path):
    parts = [p for p in path.split("/") if p]
    if parts[:2] == ["api", "v1"]:
        group, rest = "", parts[2:]
    elif len(parts) >= 3 and parts[0] == "apis" and parts[2] in group_versions(parts[1]):
        group, rest = parts[1], parts[3:]
    else:
        return None
    ns = None
    if len(rest) >= 3 and rest[0] == "namespaces" and not (
            group == "" and len(rest) == 3 and (group, rest[2]) not in RESOURCES):
        ns, rest = rest[1], rest[2:]  # else /api/v1/namespaces/{name}/{subresource}
    if not rest or len(rest) > 3 or (group, rest[0]) not in RESOURCES:
        return None
    if parts[0] == "apis" and version_of(group, rest[0]) != parts[2]:
        return None  # the resource is served at another version of its group
    route = Route(group, rest[0], ns, rest[1] if len(rest) > 1 else None,
                  rest[2] if len(rest) > 2 else None)
    if route.namespaced != (ns is not None) and not (route.namespaced and route.name is None):
        return None  # cluster-wide lists of namespaced resources are fine; the rest is 404
    return route
