"""Checks of the gleaner-scheduler Deployment and Service in deploy/manifests against the
agent's DaemonSet (report URL, token review, CA publication, RBAC, kubeconfig), and of the
Spark example in deploy/examples run through the colocation webhook's own logic
(`gleaner-scheduler mutate`)."""

import json
import os
import re
import subprocess
import tempfile
import urllib.parse

import yaml

from manifest_helpers import (PRIORITIES, check_workload, container_port, find, mount_of,
                              parse_args_list, parse_args_pairs, port_of)


def check_scheduler(c, docs, image, sched_flags, ds):
    agent_pod = ds["spec"]["template"]["spec"] if ds else {"containers": [{"args": []}],
                                                          "volumes": []}
    agent_args = parse_args_list(agent_pod["containers"][0]["args"])
    dep = find(docs, "Deployment", "gleaner-scheduler")
    svc = find(docs, "Service", "gleaner-scheduler")
    if not c.check(dep is not None and svc is not None, "scheduler Deployment and Service"):
        return
    ns = dep["metadata"]["namespace"]
    labels = dep["spec"]["template"]["metadata"]["labels"]
    pod, volumes, ctr, args = check_workload(c, docs, dep, image, sched_flags)
    listen = port_of(args.get("--listen", ":8080"))
    c.check(container_port(ctr, ctr["livenessProbe"]["httpGet"]["port"]) == listen,
            "scheduler: probe port == --listen port")
    https = "--tls-from-webhook" in args or "--tls-cert-dir" in args
    for probe in ("livenessProbe", "readinessProbe"):
        c.check((ctr[probe]["httpGet"].get("scheme", "HTTP") == "HTTPS") == https,
                "scheduler: %s scheme matches the port's TLS" % probe)
    c.check(svc["spec"]["selector"].items() <= labels.items(), "scheduler: Service selects pods")
    sp = svc["spec"]["ports"][0]
    c.check(container_port(ctr, sp["targetPort"]) == listen, "scheduler: Service targetPort")
    url = urllib.parse.urlparse(agent_args.get("--scheduler-url", ""))
    c.check(url.hostname == "%s.%s.svc" % (svc["metadata"]["name"], ns) and url.port == sp["port"]
            and url.path in ("/api/v1/reports", "/v1/reports"),
            "agent --scheduler-url %s reaches the Service's report path" % url.geturl())
    c.check((url.scheme == "https") == https, "agent --scheduler-url scheme matches the port")
    c.check(args.get("--report-service") == "%s/%s" % (ns, svc["metadata"]["name"]),
            "scheduler: --report-service is the Service agents report to")
    check_estimator(c, docs, args, ctr, svc)
    # Agents prove their node with their projected token: the scheduler reviews tokens of
    # the DaemonSet's ServiceAccount, for the audience the DaemonSet's volume asks.
    c.check(args.get("--report-auth") == "token-review", "scheduler: --report-auth=token-review")
    if ds:
        c.check(args.get("--agent-service-account") == "%s/%s" % (
            ds["metadata"]["namespace"], agent_pod.get("serviceAccountName")),
            "scheduler: --agent-service-account is the DaemonSet's")
        audiences = [src["serviceAccountToken"].get("audience")
                     for v in agent_pod["volumes"] if "projected" in v
                     for src in v["projected"]["sources"] if "serviceAccountToken" in src]
        c.check(audiences == [args.get("--agent-token-audience")],
                "scheduler: --agent-token-audience is the agents' token audience %s" % audiences)
        # The agents' optional ConfigMap volumes but the ack-slo-config (optional because it
        # may be ACK's, created by neither Gleaner binary).
        ca_maps = ["%s/%s" % (ds["metadata"]["namespace"], v["configMap"]["name"])
                   for v in agent_pod["volumes"] if v.get("configMap", {}).get("optional")
                   and v["configMap"]["name"] != "ack-slo-config"]
        published = [v for k, v in parse_args_pairs(ctr.get("args", [])) if k == "--ca-configmap"]
        c.check(ca_maps and all(m in published for m in ca_maps),
                "scheduler: --ca-configmap publishes the CA the agents mount %s" % ca_maps)
    sa = pod.get("serviceAccountName")
    cluster_rules = [r for _, d in docs if d["kind"] == "ClusterRole"
                     and d["metadata"]["name"] == sa for r in d["rules"]]
    c.check(any("tokenreviews" in r["resources"] and "create" in r["verbs"]
                for r in cluster_rules), "scheduler: its ClusterRole may create tokenreviews")
    for ref in [v for k, v in parse_args_pairs(ctr.get("args", [])) if k == "--ca-configmap"]:
        map_ns, map_name = ref.split("/")
        bound = {d["roleRef"]["name"] for _, d in docs if d["kind"] == "RoleBinding"
                 and d["metadata"]["namespace"] == map_ns
                 and any(x["name"] == sa and x.get("namespace") == ns for x in d["subjects"])}
        rules = [r for _, d in docs if d["kind"] == "Role" and d["metadata"]["namespace"] == map_ns
                 and d["metadata"]["name"] in bound for r in d["rules"]]
        c.check(any("configmaps" in r["resources"] and map_name in r.get("resourceNames", [])
                    and {"get", "update"} <= set(r["verbs"]) for r in rules)
                and any("configmaps" in r["resources"] and "create" in r["verbs"] for r in rules),
                "scheduler: a Role lets it write ConfigMap %s" % ref)
    kc = args.get("--kubeconfig", "")
    kc_mount = mount_of(ctr, volumes, lambda v: "configMap" in v)
    cm_name = [v["configMap"]["name"] for v in volumes.values() if "configMap" in v][0]
    cm = find(docs, "ConfigMap", cm_name, ns)
    key = os.path.relpath(kc, kc_mount) if kc_mount else ""
    if c.check(cm is not None and key in cm.get("data", {}), "scheduler: --kubeconfig is a key"):
        conf = yaml.safe_load(cm["data"][key])
        ctx = [x for x in conf["contexts"] if x["name"] == conf["current-context"]]
        c.check(len(ctx) == 1, "scheduler kubeconfig: current-context exists")
        c.check(conf["users"][0]["user"].get("tokenFile", "").startswith(
            "/var/run/secrets/kubernetes.io/serviceaccount/"), "scheduler kubeconfig: SA token")
    c.check(args.get("--scheduler-name") == "gleaner-scheduler", "scheduler: name")


def jvm_bytes(text):
    m = re.fullmatch(r"(\d+)([kmgt]?)b?", text.lower())
    return int(m.group(1)) << {"": 0, "k": 10, "m": 20, "g": 30, "t": 40}[m.group(2)]


def quantity_bytes(text):
    m = re.fullmatch(r"(\d+)(Ki|Mi|Gi|Ti)?", str(text))
    return int(m.group(1)) << {None: 0, "Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40}[m.group(2)]


ACK_ANNOTATION = "sparkoperator.k8s.io/koordinator-colocation"


def spark_pod(app, role, spec, labels):
    """The pod Spark 3.5 builds for `role`: its template's metadata, cpu = cores, memory
    request = limit = memory + memoryOverhead (docs/colocation-webhook.md)."""
    mem = jvm_bytes(spec["memory"]) + jvm_bytes(spec["memoryOverhead"])
    meta = spec.get("template", {}).get("metadata", {})
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "%s-%s" % (app["metadata"]["name"], role),
                         "namespace": app["metadata"]["namespace"],
                         "labels": dict(labels, **{"spark-role": role}),
                         "annotations": dict(meta.get("annotations", {}))},
            "spec": {"schedulerName": spec.get("schedulerName"),
                     "priorityClassName": spec.get("priorityClassName"),
                     "containers": [{"name": "spark-kubernetes-" + role,
                                     "resources": {"requests": {"cpu": str(spec["cores"]),
                                                                "memory": str(mem)},
                                                   "limits": {"memory": str(mem)}}}]}}


def apply_patch(obj, ops):
    """The "add" operations the webhook emits (RFC 6902), applied to `obj`."""
    for op in ops:
        assert op["op"] == "add", op
        keys = [k.replace("~1", "/").replace("~0", "~") for k in op["path"].split("/")[1:]]
        target = obj
        for k in keys[:-1]:
            target = target[int(k)] if isinstance(target, list) else target[k]
        target[keys[-1]] = op["value"]
    return obj


def mutate(bin_dir, src, pod, ns_labels, profiles=None):
    with tempfile.NamedTemporaryFile("w", suffix=".json") as f:
        json.dump(pod, f)
        f.flush()
        cmd = [os.path.join(bin_dir, "gleaner-scheduler"), "mutate", "--pod", f.name,
               "--priority-classes", os.path.join(src, "deploy", "manifests",
                                                  "priority-classes", "priority-classes.yaml")]
        if ns_labels:
            cmd += ["--namespace-labels", ",".join("%s=%s" % kv for kv in ns_labels.items())]
        if profiles:
            cmd += ["--profiles", profiles]
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
        return r.returncode, json.loads(r.stdout) if r.stdout else {}, r.stderr


def check_spark_example(c, docs, bin_dir, src):
    apps = [d for _, d in docs if d["kind"] == "SparkApplication"]
    if not c.check(len(apps) == 1, "one SparkApplication example"):
        return
    app = apps[0]
    c.check(app["apiVersion"] == "sparkoperator.k8s.io/v1beta2", "SparkApplication v1beta2")
    ns = find(docs, "Namespace", app["metadata"]["namespace"])
    hook = find(docs, "MutatingWebhookConfiguration", "gleaner-colocation")
    if not c.check(ns is not None and hook is not None, "example namespace and webhook exist"):
        return
    ns_labels = ns["metadata"].get("labels", {})
    c.check(hook["webhooks"][0]["namespaceSelector"]["matchLabels"].items() <= ns_labels.items(),
            "the webhook's namespaceSelector selects the example's namespace")
    for role in ("driver", "executor"):
        spec = app["spec"][role]
        where = "SparkApplication %s" % role
        c.check(spec.get("schedulerName") == "gleaner-scheduler", where + ": schedulerName")
        c.check(spec.get("priorityClassName") in PRIORITIES, where + ": koord priority class")
        # What the webhook makes of the pod Spark builds, through `gleaner-scheduler mutate`.
        pod = spark_pod(app, role, spec, spec.get("labels", {}))
        rc, out, err = mutate(bin_dir, src, pod, ns_labels)
        if not c.check(rc == 0 and out.get("outcome") == "mutated",
                       where + ": mutated by the webhook: rc=%d %s %s" % (rc, out, err)):
            continue
        got = apply_patch(pod, out["patch"])
        res = got["spec"]["containers"][0]["resources"]
        mem = jvm_bytes(spec["memory"]) + jvm_bytes(spec["memoryOverhead"])
        c.check(set(res["requests"]) == {"kubernetes.io/batch-cpu", "kubernetes.io/batch-memory"}
                and res["limits"] == res["requests"], where + ": only batch resources: %s" % res)
        c.check(int(res["requests"]["kubernetes.io/batch-cpu"]) == int(float(spec["cores"]) * 1000),
                where + ": batch-cpu (millicores) == cores")
        c.check(int(res["requests"]["kubernetes.io/batch-memory"]) == mem,
                where + ": batch-memory == memory + memoryOverhead")
        c.check(got["metadata"]["labels"].get("koordinator.sh/qosClass") == "BE", where + ": BE")
    # The example profile does the same by selector, for pods without the annotation.
    profile = os.path.join(src, "deploy", "examples", "colocation-profile.yaml")
    plain = spark_pod(app, "executor", dict(app["spec"]["executor"], template={},
                                            priorityClassName=None, schedulerName=None), {})
    rc, out, err = mutate(bin_dir, src, plain, ns_labels, profile)
    if c.check(rc == 0 and out.get("outcome") == "mutated",
               "colocation-profile.yaml: mutates a Spark executor: rc=%d %s %s" % (rc, out, err)):
        got = apply_patch(plain, out["patch"])
        c.check(got["spec"]["priorityClassName"] == "koord-batch"
                and got["spec"]["priority"] == PRIORITIES["koord-batch"]
                and got["metadata"]["labels"]["koordinator.sh/qosClass"] == "BE",
                "colocation-profile.yaml: koord-batch, its priority value and BE")
    rc, out, _ = mutate(bin_dir, src, plain, {}, profile)
    c.check(rc == 0 and out.get("outcome") == "skipped",
            "colocation-profile.yaml: a namespace without the label is left alone")
    # ACK One's guide: only the annotation, no schedulerName, a coreLimit above the cores.
    guide = spark_pod(app, "driver", dict(app["spec"]["driver"], schedulerName=None,
                                          priorityClassName=None, template={"metadata": {
                                              "annotations": {ACK_ANNOTATION: "true"}}}), {})
    guide["spec"]["containers"][0]["resources"]["limits"]["cpu"] = "1200m"
    rc, out, err = mutate(bin_dir, src, guide, ns_labels)
    if c.check(rc == 0 and out.get("outcome") == "mutated",
               "ACK annotation: mutated: rc=%d %s %s" % (rc, out, err)):
        got = apply_patch(guide, out["patch"])
        res = got["spec"]["containers"][0]["resources"]
        c.check(res["limits"].get("kubernetes.io/batch-cpu") == "1200" and
                res["requests"].get("kubernetes.io/batch-cpu") ==
                str(int(float(app["spec"]["driver"]["cores"]) * 1000)),
                "ACK annotation: coreLimit kept as the batch-cpu limit: %s" % res)
        c.check(got["spec"].get("schedulerName") == "gleaner-scheduler",
                "ACK annotation: a pod naming no scheduler is given gleaner-scheduler")


def check_estimator(c, docs, args, ctr, svc):
    """Karmada's estimator: the Service's port reaches --estimator-listen, and every
    per-member ExternalName Service for the Karmada control plane is what karmada-scheduler
    accepts (type ExternalName, port 10352 with a numeric targetPort) and points at it."""
    if not c.check("--estimator-listen" in args, "scheduler: --estimator-listen"):
        return
    listen = port_of(args["--estimator-listen"])
    ports = [p for p in svc["spec"]["ports"] if container_port(ctr, p["targetPort"]) == listen]
    if not c.check(len(ports) == 1 and ports[0]["port"] == 10352,
                   "scheduler Service: port 10352 reaches --estimator-listen"):
        return
    members = [d for _, d in docs if d.get("kind") == "Service" and
               d["metadata"]["name"].startswith("karmada-scheduler-estimator-")]
    c.check(len(members) >= 1, "optional: a karmada-scheduler-estimator-<cluster> Service")
    host = "%s.%s.svc.cluster.local" % (svc["metadata"]["name"], svc["metadata"]["namespace"])
    for m in members:
        name = m["metadata"]["name"]
        spec = m["spec"]
        c.check(m["metadata"].get("namespace") == "karmada-system" and
                spec.get("type") == "ExternalName" and spec.get("externalName") == host,
                "%s: ExternalName in karmada-system to %s" % (name, host))
        c.check(any(p.get("port") == 10352 and p.get("targetPort") == ports[0]["port"]
                    for p in spec.get("ports", [])),
                "%s: port 10352 with the numeric targetPort karmada-scheduler dials" % name)
