#!/usr/bin/python3
"""Offline validation of deploy/manifests and deploy/examples.

Parses every YAML document, checks kinds and required fields, cross-checks names, ports,
paths and images between objects, checks every flag in the manifests against the
binaries' own --help, runs the ack-slo-config through the agent's own parser (`calc` and
`run --check-config` with the DaemonSet's args, host paths mapped to a temp dir), and
renders the kustomization with kubectl. Run by ctest:

  manifests_test.py --bin-dir BUILD/bin --source-dir REPO

The agent's checks are in agent_checks.py, the scheduler's and the Spark example's in
scheduler_checks.py, what they share in manifest_helpers.py.
"""

import argparse
import json
import os
import re
import shutil
import subprocess
import sys

import yaml

from agent_checks import check_agent, run_agent_checks
from kubectl_checks import check_install_and_uninstall
from manifest_helpers import PRIORITIES, Checker, find, help_flags, load_docs, yaml_files
from scheduler_checks import check_scheduler, check_spark_example

NAMESPACED = {"ConfigMap", "Secret", "ServiceAccount", "DaemonSet", "Deployment", "Service",
              "ServiceMonitor", "SparkApplication"}
SLO_KEYS = ["colocation-config", "resource-threshold-config", "resource-qos-config",
            "cpu-burst-config", "system-config"]


def check_common(c, docs):
    names = set()
    for path, d in docs:
        where = "%s: %s" % (os.path.basename(path), d.get("kind"))
        c.check(d.get("apiVersion") and d.get("kind"), where + ": apiVersion and kind")
        m = d.get("metadata", {})
        c.check(m.get("name"), where + ": metadata.name")
        if d.get("kind") in NAMESPACED:
            c.check(m.get("namespace"), "%s %s: namespace" % (where, m.get("name")))
        key = (d.get("kind"), m.get("namespace"), m.get("name"))
        c.check(key not in names, "%s: duplicate %s" % (where, key))
        names.add(key)


def check_objects(c, docs):
    c.check(find(docs, "Namespace", "gleaner-system") is not None, "Namespace gleaner-system")
    for name, value in PRIORITIES.items():
        pc = find(docs, "PriorityClass", name)
        c.check(pc is not None and pc.get("value") == value, "PriorityClass %s = %d" % (name, value))
    cm = find(docs, "ConfigMap", "ack-slo-config", "kube-system")
    if c.check(cm is not None, "ConfigMap kube-system/ack-slo-config"):
        c.check(sorted(cm["data"]) == sorted(SLO_KEYS), "ack-slo-config has the five keys")
        for k, v in cm["data"].items():
            try:
                json.loads(v)
                c.check(True, "")
            except ValueError as e:
                c.check(False, "ack-slo-config %s: JSON: %s" % (k, e))
    secrets = [d for _, d in docs if d["kind"] == "Secret"
               and d["metadata"]["name"] == "gleaner-report-token"]
    c.check({s["metadata"]["namespace"] for s in secrets} == {"kube-system", "gleaner-system"},
            "token Secret in the agent's and the scheduler's namespace")
    c.check(len({s["stringData"]["token"] for s in secrets}) == 1, "token Secrets hold one value")
    for _, d in docs:
        if d["kind"] == "ClusterRoleBinding":
            role = find(docs, "ClusterRole", d["roleRef"]["name"])
            c.check(role is not None, "ClusterRoleBinding %s: role" % d["metadata"]["name"])
            for s in d["subjects"]:
                c.check(find(docs, "ServiceAccount", s["name"], s["namespace"]) is not None,
                        "ClusterRoleBinding %s: subject %s" % (d["metadata"]["name"], s["name"]))
        if d["kind"] == "ClusterRole":
            for rule in d["rules"]:
                c.check("*" not in rule["verbs"] and "*" not in rule["resources"],
                        "ClusterRole %s: no wildcards" % d["metadata"]["name"])
    sms = [d for _, d in docs if d["kind"] == "ServiceMonitor"]
    c.check(len(sms) >= 2 and all(d["apiVersion"] == "monitoring.coreos.com/v1" for d in sms),
            "ServiceMonitors (monitoring.coreos.com/v1) for agent and scheduler")
    for sm in sms:
        ns = sm["spec"]["namespaceSelector"]["matchNames"][0]
        ports = [p["name"] for _, d in docs if d["kind"] == "Service"
                 and d["metadata"]["namespace"] == ns
                 and sm["spec"]["selector"]["matchLabels"].items()
                 <= d["metadata"].get("labels", {}).items() for p in d["spec"]["ports"]]
        for ep in sm["spec"]["endpoints"]:
            c.check(ep["port"] in ports, "ServiceMonitor %s: port %s on a selected Service"
                    % (sm["metadata"]["name"], ep["port"]))


def check_kustomize(c, src, docs):
    man = os.path.join(src, "deploy", "manifests")
    with open(os.path.join(man, "kustomization.yaml")) as f:
        kust = yaml.safe_load(f)
    top = sorted(f for f in os.listdir(man) if f.endswith(".yaml") and f != "kustomization.yaml")
    c.check(sorted(kust["resources"]) == top,
            "kustomization lists every top-level manifest: %s vs %s" % (kust["resources"], top))
    kubectl = shutil.which("kubectl")
    if not kubectl:
        print("SKIP: kubectl not installed; kustomize rendering and dry-run not checked")
        return
    r = subprocess.run([kubectl, "kustomize", man], capture_output=True, text=True, timeout=60)
    if not c.check(r.returncode == 0, "kubectl kustomize: " + r.stderr.strip()):
        return
    rendered = {(d["kind"], d["metadata"].get("namespace"), d["metadata"]["name"])
                for d in yaml.safe_load_all(r.stdout) if d}
    expected = {(d["kind"], d["metadata"].get("namespace"), d["metadata"]["name"])
                for p, d in docs if os.path.dirname(p) == man}
    c.check(rendered == expected, "kustomize renders every object: %s" % (rendered ^ expected))
    # CRDs only in their own kustomization: `kubectl delete -k deploy/manifests` must never
    # delete Koordinator's or ACK's CRDs, which deletes every object of their kinds.
    c.check(not any(kind == "CustomResourceDefinition" for kind, _, _ in rendered),
            "deploy/manifests renders no CustomResourceDefinition")
    r = subprocess.run([kubectl, "kustomize", os.path.join(man, "crds")], capture_output=True,
                       text=True, timeout=60)
    if c.check(r.returncode == 0, "kubectl kustomize crds: " + r.stderr.strip()):
        crds = sorted(d["metadata"]["name"] for d in yaml.safe_load_all(r.stdout) if d)
        c.check(crds == ["clustercolocationprofiles.config.koordinator.sh",
                         "elasticquotatrees.scheduling.sigs.k8s.io"],
                "deploy/manifests/crds renders the two CRDs: %s" % crds)
    # The install and uninstall of docs/deploy.md, on an empty cluster and beside ACK.
    dirs = {man} | {os.path.join(man, d) for d in ("crds", "slo-config", "priority-classes")}
    installed = {(d["kind"], d["metadata"].get("namespace"), d["metadata"]["name"])
                 for p, d in docs if os.path.dirname(p) in dirs}
    check_install_and_uninstall(c, kubectl, src, installed)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin-dir", required=True)
    ap.add_argument("--source-dir", required=True)
    o = ap.parse_args()
    src = o.source_dir
    c = Checker()
    with open(os.path.join(src, "CMakeLists.txt")) as f:
        version = re.search(r"project\(gleaner VERSION ([0-9.]+)", f.read()).group(1)
    image = "gleaner:" + version
    paths = yaml_files(os.path.join(src, "deploy", "manifests")) + \
        yaml_files(os.path.join(src, "deploy", "examples"))
    docs = [(p, d) for p, d in load_docs(paths) if not p.endswith("kustomization.yaml")]
    check_common(c, docs)
    check_objects(c, docs)
    agent_flags = help_flags(os.path.join(o.bin_dir, "gleaner-agent"), "run")
    sched_flags = help_flags(os.path.join(o.bin_dir, "gleaner-scheduler"), "run")
    c.check("--check-config" in agent_flags, "gleaner-agent run has --check-config")
    ds = check_agent(c, docs, image, agent_flags)
    check_scheduler(c, docs, image, sched_flags, ds)
    check_spark_example(c, docs, o.bin_dir, src)
    if ds:
        run_agent_checks(c, o.bin_dir, src, ds, docs)
    check_kustomize(c, src, docs)
    # A fleet's hub and members (deploy/fleet, docs/deploy.md "A fleet").
    fleet = [(p, d) for p, d in load_docs(yaml_files(os.path.join(src, "deploy", "fleet")))]
    check_common(c, fleet)
    hook = find(fleet, "MutatingWebhookConfiguration", "gleaner-colocation")
    if c.check(hook is not None, "deploy/fleet: the members' webhook configuration"):
        url = hook["webhooks"][0]["clientConfig"].get("url", "")
        c.check(re.fullmatch(r"https://[^/]+/mutate-pod/MEMBER", url) is not None,
                "deploy/fleet: members call /mutate-pod/<member> by URL: " + url)
    for name in ("gleaner-scheduler-hub", "gleaner-scheduler-member"):
        c.check(find(fleet, "ClusterRole", name) is not None, "deploy/fleet: ClusterRole " + name)
    print("%d checks passed, %d failed over %d documents" % (c.passed, len(c.failures), len(docs)))
    return 1 if c.failures else 0


if __name__ == "__main__":
    sys.exit(main())
