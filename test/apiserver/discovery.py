"""API discovery, so kubectl can talk to the test API server: /api, /apis, each group
version's resource list, and /version. Modelled on k8s.io/apiserver's
pkg/endpoints/discovery (legacy.go: APIVersions at /api; root.go: APIGroupList at /apis;
version.go: APIResourceList at /api/v1 and /apis/<group>/<version>) and the types of
k8s.io/apimachinery pkg/apis/meta/v1. Aggregated discovery (apidiscovery.k8s.io) is not
served: clients fall back to these documents when the answer is not of that kind. OpenAPI
is not served (kubectl needs --validate=false)."""

from routes import RESOURCES, VERSIONS, group_versions, version_of

# The short names the real resources declare (kubectl get deploy, crd, sparkapp, ...).
_SHORT_NAMES = {"pods": ["po"], "services": ["svc"], "nodes": ["no"], "namespaces": ["ns"],
                "configmaps": ["cm"], "serviceaccounts": ["sa"], "events": ["ev"],
                "deployments": ["deploy"], "daemonsets": ["ds"], "priorityclasses": ["pc"],
                "customresourcedefinitions": ["crd", "crds"], "sparkapplications": ["sparkapp"]}
_VERBS = ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"]


def _group_version(group, version):
    return (group + "/" if group else "") + version


def _resource_list(group, version):
    resources = []
    for (g, plural), (kind, namespaced, has_status) in sorted(RESOURCES.items()):
        if g != group or version_of(g, plural) != version:
            continue
        verbs = ["create"] if plural in ("tokenreviews", "bindings") else _VERBS
        resources.append({"name": plural, "singularName": kind.lower(), "namespaced": namespaced,
                          "kind": kind, "verbs": verbs,
                          "shortNames": _SHORT_NAMES.get(plural, [])})
        if has_status:
            resources.append({"name": plural + "/status", "singularName": "",
                              "namespaced": namespaced, "kind": kind,
                              "verbs": ["get", "patch", "update"]})
    return {"kind": "APIResourceList", "apiVersion": "v1",
            "groupVersion": _group_version(group, version),
            "resources": resources}


def document(path):
    """The discovery document at `path`, or None when `path` is not a discovery path."""
    path = path.rstrip("/")
    if path == "/version":
        return {"major": "1", "minor": "32", "gitVersion": "v1.32.0-gleaner-test",
                "platform": "linux/amd64"}
    if path == "/api":
        return {"kind": "APIVersions", "versions": ["v1"], "serverAddressByClientCIDRs": [
            {"clientCIDR": "0.0.0.0/0", "serverAddress": "127.0.0.1"}]}
    if path == "/api/v1":
        return _resource_list("", "v1")
    if path == "/apis":
        groups = []
        for group in sorted(g for g in VERSIONS if g):
            gvs = [{"groupVersion": _group_version(group, v), "version": v}
                   for v in group_versions(group)]
            groups.append({"name": group, "versions": gvs, "preferredVersion": gvs[0]})
        return {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}
    parts = path.split("/")
    if len(parts) == 4 and parts[1] == "apis" and parts[3] in group_versions(parts[2]):
        return _resource_list(parts[2], parts[3])
    return None
