"""The documented install and uninstall commands (docs/deploy.md), run by the real kubectl
against the project's test API server (test/apiserver, which serves API discovery as
kube-apiserver does and answers a create of a taken name with 409 AlreadyExists, as
apiserver's registry does):

- on an empty cluster: every object of deploy/manifests, the ack-slo-config and the CRDs
  exist after the install, and the uninstall removes them all;
- beside ACK: a cluster that already has ACK's `kube-system/ack-slo-config` and
  Koordinator's ClusterColocationProfile CRD keeps both byte-for-byte through the install
  and the uninstall (the missing ElasticQuotaTree CRD is created, and removed again).

What the kubectl verbs do, and why the install uses `create` for what may already exist:
`kubectl apply` creates an object or patches the live one towards the file (kubectl's
staging/src/k8s.io/kubectl/pkg/cmd/apply/apply.go), so it would overwrite ACK's data;
`kubectl create` only POSTs and reports AlreadyExists for a taken name
(staging/src/k8s.io/kubectl/pkg/cmd/create/create.go), leaving the live object alone;
`kubectl delete -k` deletes every object the kustomization renders, whoever created it.
"""

import contextlib
import json
import os
import subprocess
import tempfile

import yaml

from manifest_helpers import load_docs

# The commands of docs/deploy.md ("3. Apply" and "Removing"), each checked to appear there
# verbatim so that the test runs what a user reads. The service-monitor lines need the
# Prometheus operator's CRDs and are left out.
INSTALL = [
    "kubectl create -f deploy/manifests/priority-classes/priority-classes.yaml",
    "kubectl create -k deploy/manifests/crds",
    "kubectl create -k deploy/manifests/slo-config",
    "kubectl apply -k deploy/manifests",
]
UNINSTALL = [
    "kubectl delete -k deploy/manifests",
    "kubectl delete priorityclass -l app.kubernetes.io/created-by=gleaner",
    "kubectl -n kube-system delete configmap -l app.kubernetes.io/created-by=gleaner",
    "kubectl delete crd -l app.kubernetes.io/created-by=gleaner",
]
# A create whose object may exist already (Koordinator's or ACK's): AlreadyExists is the
# expected answer there, and the command then exits 1.
MAY_EXIST = {INSTALL[0], INSTALL[1], INSTALL[2]}

CCP_CRD = "clustercolocationprofiles.config.koordinator.sh"
EQT_CRD = "elasticquotatrees.scheduling.sigs.k8s.io"
ACK_KEYS = {  # ack-feature-docs fixture folder -> the key its file holds
    "dynamic-resource-overcommitment": "colocation-config",
    "cpu-suppress/basic": "resource-threshold-config",
    "cpu-qos": "resource-qos-config",
    "cpu-burst/basic": "cpu-burst-config",
}


@contextlib.contextmanager
def test_cluster(c, kubectl, src):
    """Yields kubectl_run(args, may_fail=False) -> (rc, stdout, stderr) against a fresh test
    API server, or None when the server did not start (a failed check)."""
    server = subprocess.Popen(["/usr/bin/python3", os.path.join(src, "test", "apiserver",
                                                                 "apiserver.py"), "--port", "0"],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              stderr=subprocess.DEVNULL, text=True)
    try:
        line = server.stdout.readline()
        if not c.check(line.startswith("ready port="), "test API server started: " + line):
            yield None
            return
        with tempfile.TemporaryDirectory(prefix="gleaner-kubectl-") as tmp:
            kc = os.path.join(tmp, "kubeconfig")
            with open(kc, "w") as f:
                yaml.safe_dump({"apiVersion": "v1", "kind": "Config", "current-context": "t",
                                "clusters": [{"name": "t", "cluster": {
                                    "server": "http://127.0.0.1:" + line.split("=")[1].strip()}}],
                                "contexts": [{"name": "t", "context": {"cluster": "t",
                                                                       "user": "t"}}],
                                "users": [{"name": "t", "user": {}}]}, f)

            def kubectl_run(args, may_fail=False, stdin=None):
                # OpenAPI is not served: no client-side schema validation.
                if args[0] in ("create", "apply"):
                    args = [args[0], "--validate=false"] + args[1:]
                r = subprocess.run([kubectl, "--kubeconfig", kc, "--request-timeout=20s"] + args,
                                   input=stdin, stdin=None if stdin else subprocess.DEVNULL,
                                   capture_output=True, text=True, timeout=90, cwd=src)
                if not may_fail:
                    c.check(r.returncode == 0, "kubectl %s: %s" % (" ".join(args),
                                                                  r.stderr.strip()))
                return r.returncode, r.stdout, r.stderr
            yield kubectl_run
    finally:
        server.stdin.close()
        server.kill()
        server.wait()


def run_documented(c, kubectl_run, commands, deploy_md):
    """Runs each command as docs/deploy.md writes it; a create of what may exist may only
    fail with AlreadyExists."""
    for cmd in commands:
        c.check(cmd in deploy_md, "docs/deploy.md shows `%s`" % cmd)
        args = cmd.split()[1:]
        # Delete without waiting for finalizers: the test API server runs no garbage collector.
        if "delete" in args:
            args.append("--wait=false")
        rc, _, err = kubectl_run(args, may_fail=cmd in MAY_EXIST)
        if rc != 0 and cmd in MAY_EXIST:
            others = [e for e in err.strip().splitlines() if "(AlreadyExists)" not in e]
            c.check(not others, "`%s`: only AlreadyExists errors: %s" % (cmd, others))


def names(kubectl_run, resources):
    _, out, _ = kubectl_run(["get", resources, "-A", "-o", "name"])
    return set(out.split())


def plural(kind):
    k = kind.lower()
    return k[:-1] + "ies" if k.endswith("y") else k + "es" if k.endswith("s") else k + "s"


def changed(before, after):
    """What differs between two versions of an object: the top-level fields of metadata,
    data and spec whose values differ ("gone" when the object no longer exists)."""
    if after is None:
        return "gone"
    return sorted("%s.%s" % (part, key) for part in ("metadata", "data", "spec")
                  for key in set(before.get(part, {})) | set(after.get(part, {}))
                  if before.get(part, {}).get(key) != after.get(part, {}).get(key))


def live(kubectl_run, *what):
    """The live object as JSON, None when it does not exist."""
    rc, out, err = kubectl_run(["get", "-o", "json"] + list(what), may_fail=True)
    return json.loads(out) if rc == 0 else None if "(NotFound)" in err else err


def ack_slo_config(src):
    """ACK's ack-slo-config as ACK's feature pages write it (test/fixtures/koordinator-config,
    the exact strings), the ConfigMap a cluster with ack-koordinator already has."""
    fixtures = os.path.join(src, "test", "fixtures", "koordinator-config", "ack-feature-docs")
    data = {}
    for folder, key in ACK_KEYS.items():
        with open(os.path.join(fixtures, folder, key)) as f:
            data[key] = f.read()
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "ack-slo-config", "namespace": "kube-system",
                         "labels": {"app.kubernetes.io/managed-by": "ack-koordinator"}},
            "data": data}


def koordinator_crd(src):
    """A ClusterColocationProfile CRD that is not Gleaner's: its labels are another
    installer's and its schema has a field Gleaner's does not (what Koordinator's, generated
    by controller-gen from its Go types, looks like to a replacement)."""
    path = os.path.join(src, "deploy", "manifests", "crds", "colocation-profile-crd.yaml")
    crd = load_docs([path])[0][1]
    crd["metadata"]["labels"] = {"app.kubernetes.io/managed-by": "Helm"}
    crd["metadata"]["annotations"] = {"controller-gen.kubebuilder.io/version": "v0.16.5"}
    props = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    props["properties"]["koordinatorOnlyField"] = {"type": "string"}
    return crd


def check_empty_cluster(c, kubectl, src, expected, deploy_md):
    """Install on a cluster without Koordinator or ACK, then uninstall: nothing left."""
    with test_cluster(c, kubectl, src) as kubectl_run:
        if kubectl_run is None:
            return
        run_documented(c, kubectl_run, INSTALL, deploy_md)
        kinds = ",".join(sorted({plural(k) for k, _, _ in expected}))
        got = set()
        _, out, _ = kubectl_run(["get", "-A", "-o", "json", kinds])
        for d in json.loads(out or '{"items": []}')["items"]:
            got.add((d["kind"], d["metadata"].get("namespace"), d["metadata"]["name"]))
        c.check(expected <= got, "installed: every object: %s" % (expected - got))
        run_documented(c, kubectl_run, UNINSTALL, deploy_md)
        left = names(kubectl_run, "customresourcedefinitions,deployments,daemonsets,"
                     "priorityclasses,configmaps")
        c.check(not left, "uninstalled: nothing of Gleaner's is left: %s" % sorted(left))


def unchanged(c, kubectl_run, cm_before, crd_before, when):
    cm = live(kubectl_run, "-n", "kube-system", "configmap", "ack-slo-config")
    c.check(cm == cm_before, "%s: ACK's ack-slo-config untouched: %s" % (
        when, changed(cm_before, cm)))
    crd = live(kubectl_run, "crd", CCP_CRD)
    c.check(crd == crd_before, "%s: Koordinator's ClusterColocationProfile CRD untouched: %s" % (
        when, changed(crd_before, crd)))


def check_beside_ack(c, kubectl, src, deploy_md):
    """Install and uninstall on a cluster with ACK's ack-slo-config and Koordinator's
    ClusterColocationProfile CRD: both stay exactly as they were."""
    with test_cluster(c, kubectl, src) as kubectl_run:
        if kubectl_run is None:
            return
        for obj in (ack_slo_config(src), koordinator_crd(src)):
            kubectl_run(["create", "-f", "-"], stdin=json.dumps(obj))
        cm_before = live(kubectl_run, "-n", "kube-system", "configmap", "ack-slo-config")
        crd_before = live(kubectl_run, "crd", CCP_CRD)
        run_documented(c, kubectl_run, INSTALL, deploy_md)
        unchanged(c, kubectl_run, cm_before, crd_before, "installed beside ACK")
        c.check(live(kubectl_run, "crd", EQT_CRD) is not None,
                "installed beside ACK: the missing ElasticQuotaTree CRD created")
        run_documented(c, kubectl_run, UNINSTALL, deploy_md)
        unchanged(c, kubectl_run, cm_before, crd_before, "uninstalled beside ACK")
        c.check(live(kubectl_run, "crd", EQT_CRD) is None,
                "uninstalled beside ACK: the ElasticQuotaTree CRD the install created is gone")


def check_install_and_uninstall(c, kubectl, src, expected):
    with open(os.path.join(src, "docs", "deploy.md")) as f:
        deploy_md = f.read()
    check_empty_cluster(c, kubectl, src, expected, deploy_md)
    check_beside_ack(c, kubectl, src, deploy_md)
