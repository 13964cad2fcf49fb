"""Shared pieces of the deploy/ manifest checks (manifests_test.py, agent_checks.py,
scheduler_checks.py): loading the YAML documents, the Checker that counts results, finding
objects by kind and name, reading container args and ports, and the pod spec checks the
agent's DaemonSet and the scheduler's Deployment have in common."""

import os
import re
import subprocess

import yaml

PRIORITIES = {"koord-prod": 9000, "koord-mid": 7000, "koord-batch": 5000, "koord-free": 3000}
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


def check_workload(c, docs, obj, image, accepted_flags):
    """A DaemonSet or Deployment named after the binary it runs: its pod spec
    (check_pod_spec), its first container's command `<binary> run`, and every flag of its
    args accepted by that command. Returns (pod spec, volumes, container, args)."""
    kind, name = obj["kind"], obj["metadata"]["name"]
    pod = obj["spec"]["template"]["spec"]
    volumes = check_pod_spec(c, docs, kind, name, pod, obj["metadata"]["namespace"], image)
    ctr = pod["containers"][0]
    c.check(ctr["command"] == [name, "run"], "%s: command %s run" % (name, name))
    args = parse_args_list(ctr.get("args", []))
    for flag in args:
        c.check(flag in accepted_flags, "%s: flag %s accepted by %s run" % (name, flag, name))
    return pod, volumes, ctr, args


def mount_of(container, volumes, volume_pred):
    for vm in container.get("volumeMounts", []):
        if volume_pred(volumes[vm["name"]]):
            return vm["mountPath"]
    return None
