#!/usr/bin/python3
"""Offline validation of deploy/manifests and deploy/examples.

Parses every YAML document, checks kinds and required fields, cross-checks names, ports,
paths and images between objects, checks every flag in the manifests against the
binaries' own --help, runs the ack-slo-config through the agent's own parser (`calc` and
`run --check-config` with the DaemonSet's args, host paths mapped to a temp dir), and
renders the kustomization with kubectl. Run by ctest:

  manifests_test.py --bin-dir BUILD/bin --source-dir REPO
"""

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import urllib.parse

import yaml

NAMESPACED = {"ConfigMap", "Secret", "ServiceAccount", "DaemonSet", "Deployment", "Service",
              "ServiceMonitor", "SparkApplication"}
SLO_KEYS = ["colocation-config", "resource-threshold-config", "resource-qos-config",
            "cpu-burst-config", "system-config"]
PRIORITIES = {"koord-prod": 9500, "koord-mid": 7500, "koord-batch": 5500, "koord-free": 3500}
BUILTIN_PRIORITY_CLASSES = {"system-node-critical", "system-cluster-critical"}


class Checker:
    def __init__(self):
        self.failures = []
        self.passed = 0

    def check(self, cond, what):
        if cond:
            self.passed += 1
        else:
            self.failures.append(what)
            print("FAIL: " + what)
        return cond


def load_docs(paths):
    docs = []
    for path in paths:
        with open(path) as f:
            for doc in yaml.safe_load_all(f):
                if doc is not None:
                    docs.append((path, doc))
    return docs


def yaml_files(root):
    out = []
    for dirpath, _, files in os.walk(root):
        out += [os.path.join(dirpath, f) for f in files if f.endswith((".yaml", ".yml"))]
    return sorted(out)


def find(docs, kind, name, namespace=None):
    for _, d in docs:
        m = d.get("metadata", {})
        if d.get("kind") == kind and m.get("name") == name and \
                (namespace is None or m.get("namespace") == namespace):
            return d
    return None


def parse_args_list(args):
    """['--a=b', '--c', 'd', '--flag'] -> {'--a': 'b', '--c': 'd', '--flag': None}."""
    out, i = {}, 0
    while i < len(args):
        a = args[i]
        if "=" in a:
            k, v = a.split("=", 1)
            out[k] = v
        elif i + 1 < len(args) and not args[i + 1].startswith("--"):
            out[a] = args[i + 1]
            i += 1
        else:
            out[a] = None
        i += 1
    return out


def parse_args_pairs(args):
    """(flag, value) for every --flag=value, repeats kept."""
    return [tuple(a.split("=", 1)) for a in args if a.startswith("--") and "=" in a]


def help_flags(binary, subcommand):
    r = subprocess.run([binary, subcommand, "--help"], capture_output=True, text=True, timeout=30)
    return set(re.findall(r"(--[a-z][a-z0-9-]*)", r.stdout + r.stderr))


def port_of(addr):
    return int(addr.rsplit(":", 1)[1])


def container_port(container, ref):
    if isinstance(ref, int):
        return ref
    for p in container.get("ports", []):
        if p.get("name") == ref:
            return p["containerPort"]
    return None


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


def check_pod_spec(c, docs, kind, name, pod, ns, image):
    where = "%s %s" % (kind, name)
    c.check(find(docs, "ServiceAccount", pod.get("serviceAccountName"), ns) is not None,
            where + ": serviceAccountName names a ServiceAccount in " + ns)
    pc = pod.get("priorityClassName")
    c.check(pc in BUILTIN_PRIORITY_CLASSES or find(docs, "PriorityClass", pc) is not None,
            where + ": priorityClassName %s exists" % pc)
    volumes = {v["name"]: v for v in pod.get("volumes", [])}
    mounted = set()
    for ctr in pod["containers"]:
        c.check(ctr.get("image") == image, "%s: image %s == %s" % (where, ctr.get("image"), image))
        res = ctr.get("resources", {})
        c.check(res.get("requests", {}).get("memory") and res.get("limits", {}).get("memory"),
                where + ": memory request and limit")
        for vm in ctr.get("volumeMounts", []):
            mounted.add(vm["name"])
            c.check(vm["name"] in volumes, "%s: mount %s has a volume" % (where, vm["name"]))
    c.check(mounted == set(volumes), where + ": every volume is mounted")
    for v in volumes.values():
        # An optional ConfigMap is published at run time (the scheduler's CA).
        if "configMap" in v and not v["configMap"].get("optional"):
            c.check(find(docs, "ConfigMap", v["configMap"]["name"], ns) is not None,
                    "%s: ConfigMap %s in %s" % (where, v["configMap"]["name"], ns))
        if "secret" in v:
            c.check(find(docs, "Secret", v["secret"]["secretName"], ns) is not None,
                    "%s: Secret %s in %s" % (where, v["secret"]["secretName"], ns))
    return volumes


def mount_of(container, volumes, volume_pred):
    for vm in container.get("volumeMounts", []):
        if volume_pred(volumes[vm["name"]]):
            return vm["mountPath"]
    return None


def check_agent(c, docs, image, agent_flags):
    ds = find(docs, "DaemonSet", "gleaner-agent")
    if not c.check(ds is not None, "DaemonSet gleaner-agent exists"):
        return None
    ns = ds["metadata"]["namespace"]
    pod = ds["spec"]["template"]["spec"]
    c.check(ds["spec"]["selector"]["matchLabels"].items() <=
            ds["spec"]["template"]["metadata"]["labels"].items(), "agent: selector matches pods")
    volumes = check_pod_spec(c, docs, "DaemonSet", "gleaner-agent", pod, ns, image)
    ctr = pod["containers"][0]
    c.check(ctr["command"] == ["gleaner-agent", "run"], "agent: command gleaner-agent run")
    args = parse_args_list(ctr.get("args", []))
    for flag in args:
        c.check(flag in agent_flags, "agent: flag %s accepted by gleaner-agent run" % flag)
    c.check(pod.get("hostPID") is True, "agent: hostPID")
    c.check(ctr["securityContext"].get("privileged") is True, "agent: privileged")
    c.check(pod.get("priorityClassName") == "system-node-critical", "agent: system-node-critical")
    c.check(any(t.get("operator") == "Exists" and "key" not in t and "effect" not in t
                for t in pod.get("tolerations", [])), "agent: tolerates every taint")
    c.check(pod.get("terminationGracePeriodSeconds", 0) >= 30, "agent: grace period >= 30s")
    env = {e["name"]: e for e in ctr.get("env", [])}
    c.check(env.get("NODE_NAME", {}).get("valueFrom", {}).get("fieldRef", {}).get("fieldPath")
            == "spec.nodeName", "agent: NODE_NAME from spec.nodeName")
    kubelet = args.get("--kubelet-host", "")
    m = re.fullmatch(r"\$\((\w+)\)", kubelet)
    c.check(m and env.get(m.group(1), {}).get("valueFrom", {}).get("fieldRef", {})
            .get("fieldPath") == "status.hostIP", "agent: --kubelet-host from status.hostIP")
    host_paths = {v["hostPath"]["path"]: n for n, v in volumes.items() if "hostPath" in v}
    for p in ["/sys/fs/cgroup", "/sys/fs", "/proc", "/sys/kernel", "/sys/fs/bpf",
              "/var/lib/gleaner"]:
        c.check(p in host_paths, "agent: hostPath " + p)
    # Paths a node may lack (resctrl, BTF) are reached through parents every node has, so
    # the pod starts everywhere.
    for v in volumes.values():
        hp = v.get("hostPath", {})
        c.check(hp.get("path") not in ("/sys/fs/resctrl", "/sys/kernel/btf"),
                "agent: no hostPath a node may lack (%s)" % hp.get("path"))
    mounts = {vm["name"]: vm["mountPath"] for vm in ctr["volumeMounts"]}
    for flag, host in [("--cgroup-root", "/sys/fs/cgroup"), ("--proc-root", "/proc"),
                       ("--state-dir", "/var/lib/gleaner")]:
        c.check(mounts.get(host_paths.get(host)) == args.get(flag, "/var/lib/gleaner"),
                "agent: %s %s is where %s is mounted" % (flag, args.get(flag), host))
    c.check(args.get("--resctrl-root") == mounts.get(host_paths.get("/sys/fs")) + "/resctrl",
            "agent: --resctrl-root is the host's /sys/fs/resctrl")
    sys_fs = [vm for vm in ctr["volumeMounts"] if vm["name"] == host_paths.get("/sys/fs")]
    c.check(sys_fs and sys_fs[0].get("mountPropagation") == "Bidirectional",
            "agent: a resctrl the agent mounts reaches the host (Bidirectional)")
    c.check(mounts.get(host_paths.get("/sys/kernel")) == "/sys/kernel",
            "agent: BTF at /sys/kernel/btf (the path the agent checks)")
    config_mount = mount_of(ctr, volumes, lambda v: v.get("configMap", {}).get("name")
                            == "ack-slo-config")
    c.check(config_mount is not None and config_mount == args.get("--config-dir"),
            "agent: ack-slo-config mounted at --config-dir %s" % args.get("--config-dir"))
    token_mount = mount_of(ctr, volumes, lambda v: "projected" in v)
    c.check(token_mount and args.get("--token-file", "").startswith(token_mount + "/"),
            "agent: --token-file inside the projected token mount")
    sa_tokens = [src["serviceAccountToken"] for v in volumes.values() if "projected" in v
                 for src in v["projected"]["sources"] if "serviceAccountToken" in src]
    c.check(len(sa_tokens) == 1 and token_mount and args.get("--token-file") ==
            token_mount + "/" + sa_tokens[0].get("path", ""),
            "agent: --token-file is the projected ServiceAccount token")
    ca_mount = mount_of(ctr, volumes, lambda v: v.get("configMap", {}).get("optional") is True)
    c.check(ca_mount and args.get("--scheduler-ca-file") == ca_mount + "/ca.crt",
            "agent: --scheduler-ca-file in the optional CA ConfigMap mount")
    c.check(args.get("--kubelet-ca-file") ==
            "/var/run/secrets/kubernetes.io/serviceaccount/ca.crt"
            and "--kubelet-insecure-tls" not in args,
            "agent: kubelet's certificate verified with the cluster CA")
    metrics_port = port_of(args.get("--metrics-addr", ":9316"))
    for probe, path in [("livenessProbe", "/healthz"), ("readinessProbe", "/readyz")]:
        get = ctr.get(probe, {}).get("httpGet", {})
        c.check(get.get("path") == path, "agent: %s path %s" % (probe, path))
        c.check(container_port(ctr, get.get("port")) == metrics_port,
                "agent: %s port == --metrics-addr port %d" % (probe, metrics_port))
    ann = ds["spec"]["template"]["metadata"].get("annotations", {})
    c.check(ann.get("prometheus.io/scrape") == "true" and
            ann.get("prometheus.io/port") == str(metrics_port), "agent: scrape annotations")
    return ds


def check_scheduler(c, docs, image, sched_flags, ds):
    agent_pod = ds["spec"]["template"]["spec"] if ds else {"containers": [{"args": []}],
                                                          "volumes": []}
    agent_args = parse_args_list(agent_pod["containers"][0]["args"])
    dep = find(docs, "Deployment", "gleaner-scheduler")
    svc = find(docs, "Service", "gleaner-scheduler")
    if not c.check(dep is not None and svc is not None, "scheduler Deployment and Service"):
        return
    ns = dep["metadata"]["namespace"]
    pod = dep["spec"]["template"]["spec"]
    labels = dep["spec"]["template"]["metadata"]["labels"]
    volumes = check_pod_spec(c, docs, "Deployment", "gleaner-scheduler", pod, ns, image)
    ctr = pod["containers"][0]
    c.check(ctr["command"] == ["gleaner-scheduler", "run"], "scheduler: command")
    args = parse_args_list(ctr.get("args", []))
    for flag in args:
        c.check(flag in sched_flags, "scheduler: flag %s accepted by gleaner-scheduler run" % flag)
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
        ca_maps = ["%s/%s" % (ds["metadata"]["namespace"], v["configMap"]["name"])
                   for v in agent_pod["volumes"] if v.get("configMap", {}).get("optional")]
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


def jvm_bytes(text):
    m = re.fullmatch(r"(\d+)([kmgt]?)b?", text.lower())
    return int(m.group(1)) << {"": 0, "k": 10, "m": 20, "g": 30, "t": 40}[m.group(2)]


def quantity_bytes(text):
    m = re.fullmatch(r"(\d+)(Ki|Mi|Gi|Ti)?", str(text))
    return int(m.group(1)) << {None: 0, "Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40}[m.group(2)]


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
                                                  "priority-classes.yaml")]
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


def write_fake_host(tmp, args, docs):
    """The DaemonSet's in-container paths, mapped into `tmp` with fake contents."""
    cgroup = os.path.join(tmp, "cgroup")
    os.makedirs(cgroup)
    with open(os.path.join(cgroup, "cgroup.controllers"), "w") as f:
        f.write("cpuset cpu io memory pids\n")
    proc = os.path.join(tmp, "proc")
    os.makedirs(proc)
    with open(os.path.join(proc, "stat"), "w") as f:
        f.write("cpu  100 0 50 1000 0 0 0 0 0 0\ncpu0 50 0 25 500 0 0 0 0 0 0\n"
                "cpu1 50 0 25 500 0 0 0 0 0 0\n")
    with open(os.path.join(proc, "meminfo"), "w") as f:
        f.write("MemTotal:       16384000 kB\nMemFree:         8000000 kB\n"
                "MemAvailable:   12000000 kB\n")
    resctrl = os.path.join(tmp, "resctrl")
    os.makedirs(resctrl)
    config = os.path.join(tmp, "slo-config")
    os.makedirs(config)
    for k, v in find(docs, "ConfigMap", "ack-slo-config", "kube-system")["data"].items():
        with open(os.path.join(config, k), "w") as f:
            f.write(v)
    token_dir = os.path.join(tmp, "token")
    os.makedirs(token_dir)
    token_file = os.path.join(token_dir, os.path.basename(args["--token-file"]))
    with open(token_file, "w") as f:
        f.write("projected.token.stand-in")
    # The ServiceAccount's ca.crt (kubelet's CA); the scheduler's CA is not published yet,
    # which the agent waits for.
    kubelet_ca = os.path.join(tmp, "ca.crt")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                    "ec_paramgen_curve:prime256v1", "-nodes", "-days", "1", "-subj", "/CN=ca",
                    "-keyout", os.path.join(tmp, "ca.key"), "-out", kubelet_ca],
                   capture_output=True, check=True, timeout=60)
    return {"--cgroup-root": cgroup, "--proc-root": proc, "--resctrl-root": resctrl,
            "--config-dir": config, "--token-file": token_file, "--kubelet-ca-file": kubelet_ca,
            "--scheduler-ca-file": os.path.join(tmp, "scheduler-ca", "ca.crt")}


def run_agent_checks(c, bin_dir, src, ds, docs):
    agent = os.path.join(bin_dir, "gleaner-agent")
    ctr = ds["spec"]["template"]["spec"]["containers"][0]
    args = parse_args_list(ctr["args"])
    with tempfile.TemporaryDirectory(prefix="gleaner-deploy-") as tmp:
        mapped = write_fake_host(tmp, args, docs)
        config_dir = mapped["--config-dir"]
        # The ConfigMap through the agent's own loader, as `calc` reports it.
        r = subprocess.run([agent, "calc", "--snapshot",
                            os.path.join(src, "examples", "node-snapshot.json"),
                            "--config-dir", config_dir], capture_output=True, text=True,
                           timeout=60)
        c.check(r.returncode == 0 and "config key" not in r.stderr,
                "ack-slo-config through `gleaner-agent calc`: rc=%d stderr=%s"
                % (r.returncode, r.stderr.strip()))
        # The DaemonSet's own args, host paths mapped, env as the downward API sets it.
        env = dict(os.environ, NODE_NAME="node-1", KUBELET_HOST="10.0.0.1")
        argv = []
        for flag, value in args.items():
            value = mapped.get(flag, value)
            if value is not None:
                value = re.sub(r"\$\((\w+)\)", lambda m: env[m.group(1)], value)
                argv.append("%s=%s" % (flag, value))
            else:
                argv.append(flag)
        cmd = [agent, "run"] + argv + ["--check-config"]
        r = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=60)
        c.check(r.returncode == 0 and "config OK" in r.stdout,
                "gleaner-agent run <DaemonSet args> --check-config: rc=%d stdout=%s stderr=%s"
                % (r.returncode, r.stdout.strip(), r.stderr.strip()))
        # The same check must catch a bad value, or the pass above proves nothing.
        with open(os.path.join(config_dir, "colocation-config")) as f:
            bad = json.load(f)
        bad["cpuReclaimThresholdPercent"] = 150
        with open(os.path.join(config_dir, "colocation-config"), "w") as f:
            json.dump(bad, f)
        r = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=60)
        c.check(r.returncode == 2 and "cpuReclaimThresholdPercent" in r.stderr,
                "--check-config rejects cpuReclaimThresholdPercent 150: rc=%d stderr=%s"
                % (r.returncode, r.stderr.strip()))


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
    # Client-side dry run still asks the server for API discovery: point kubectl at a port
    # nothing listens on (never at whatever may run on localhost:8080) and skip if it needs it.
    with tempfile.TemporaryDirectory(prefix="gleaner-kubectl-") as tmp:
        kc = os.path.join(tmp, "kubeconfig")
        with open(kc, "w") as f:
            yaml.safe_dump({"apiVersion": "v1", "kind": "Config", "current-context": "none",
                            "clusters": [{"name": "none",
                                          "cluster": {"server": "https://127.0.0.1:1"}}],
                            "contexts": [{"name": "none",
                                          "context": {"cluster": "none", "user": "none"}}],
                            "users": [{"name": "none", "user": {"token": "none"}}]}, f)
        r = subprocess.run([kubectl, "--kubeconfig", kc, "--request-timeout=5s", "apply",
                            "--dry-run=client", "--validate=false", "-k", man],
                           stdin=subprocess.DEVNULL,
                           capture_output=True, text=True, timeout=60)
        if r.returncode != 0 and re.search(r"connection refused|unable to recognize|"
                                           r"couldn't get current server", r.stderr):
            print("SKIP: kubectl apply --dry-run=client needs an API server for discovery here")
        else:
            c.check(r.returncode == 0, "kubectl apply --dry-run=client: " + r.stderr.strip())


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
    print("%d checks passed, %d failed over %d documents" % (c.passed, len(c.failures), len(docs)))
    return 1 if c.failures else 0


if __name__ == "__main__":
    sys.exit(main())
