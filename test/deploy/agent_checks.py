"""Checks of the gleaner-agent DaemonSet in deploy/manifests: its pod spec, flags, host
paths and mounts, probes and token; and the DaemonSet's own args run through the agent
(`calc` and `run --check-config`) with the host paths mapped to a temp dir."""

import json
import os
import re
import subprocess
import tempfile

from manifest_helpers import (check_workload, container_port, find, mount_of, parse_args_list,
                              port_of)


def check_agent(c, docs, image, agent_flags):
    ds = find(docs, "DaemonSet", "gleaner-agent")
    if not c.check(ds is not None, "DaemonSet gleaner-agent exists"):
        return None
    c.check(ds["spec"]["selector"]["matchLabels"].items() <=
            ds["spec"]["template"]["metadata"]["labels"].items(), "agent: selector matches pods")
    pod, volumes, ctr, args = check_workload(c, docs, ds, image, agent_flags)
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
    # system-config writes /proc/sys/vm (under --proc-root) and /sys/kernel/mm/memcg_reaper.
    for host in ("/proc", "/sys/kernel"):
        ro = [vm for vm in ctr["volumeMounts"]
              if vm["name"] == host_paths.get(host) and vm.get("readOnly")]
        c.check(not ro, "agent: %s mounted writable (system-config writes there)" % host)
    config_mount = mount_of(ctr, volumes, lambda v: v.get("configMap", {}).get("name")
                            == "ack-slo-config")
    c.check(config_mount is not None and config_mount == args.get("--config-dir"),
            "agent: ack-slo-config mounted at --config-dir %s" % args.get("--config-dir"))
    # Not in the kustomization (an existing one may be ACK's): the pod must start without it.
    c.check(mount_of(ctr, volumes, lambda v: v.get("configMap", {}).get("name")
                     == "ack-slo-config" and v["configMap"].get("optional") is True)
            == config_mount, "agent: the ack-slo-config volume is optional")
    token_mount = mount_of(ctr, volumes, lambda v: "projected" in v)
    c.check(token_mount and args.get("--token-file", "").startswith(token_mount + "/"),
            "agent: --token-file inside the projected token mount")
    sa_tokens = [src["serviceAccountToken"] for v in volumes.values() if "projected" in v
                 for src in v["projected"]["sources"] if "serviceAccountToken" in src]
    c.check(len(sa_tokens) == 1 and token_mount and args.get("--token-file") ==
            token_mount + "/" + sa_tokens[0].get("path", ""),
            "agent: --token-file is the projected ServiceAccount token")
    ca_mount = mount_of(ctr, volumes, lambda v: v.get("configMap", {}).get("name")
                        == "gleaner-scheduler-ca" and v["configMap"].get("optional") is True)
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
        c.check(r.returncode == 0 and "config OK" in r.stdout and "warning" not in r.stderr,
                "gleaner-agent run <DaemonSet args> --check-config, no field unaccounted for: "
                "rc=%d stdout=%s stderr=%s" % (r.returncode, r.stdout.strip(), r.stderr.strip()))
        # No ack-slo-config in the cluster (it is created only where none exists): kubelet
        # mounts the optional volume as an empty directory. The agent starts on the
        # built-in defaults, which offer no batch capacity.
        absent = os.path.join(tmp, "slo-config-absent")
        os.makedirs(absent)
        r = subprocess.run([a if not a.startswith("--config-dir=") else "--config-dir=" + absent
                            for a in cmd], capture_output=True, text=True, env=env, timeout=60)
        c.check(r.returncode == 0 and "config OK" in r.stdout,
                "--check-config with no ack-slo-config (empty directory): rc=%d stderr=%s"
                % (r.returncode, r.stderr.strip()))
        r = subprocess.run([agent, "calc", "--snapshot",
                            os.path.join(src, "examples", "node-snapshot.json"),
                            "--config-dir", absent], capture_output=True, text=True, timeout=60)
        calc = json.loads(r.stdout) if r.returncode == 0 else {}
        c.check(calc.get("colocation") == "disabled" and calc.get("batch") is None,
                "no ack-slo-config: colocation disabled, no batch offered: %s"
                % {k: calc.get(k) for k in ("colocation", "batch")})
        # What `run` would refuse at start-up, --check-config refuses too.
        for flag, value, word in [("--interference-runq-p99-bound", "5zz", "--interference"),
                                  ("--metrics-addr", ":x", "--metrics-addr"),
                                  ("--kubeconfig", "/nonexistent/kubeconfig", "--kubeconfig")]:
            bad_cmd = [a for a in cmd if not a.startswith(flag + "=")] + ["%s=%s" % (flag, value)]
            r = subprocess.run(bad_cmd, capture_output=True, text=True, env=env, timeout=60)
            c.check(r.returncode == 2 and word in r.stderr,
                    "--check-config refuses %s=%s: rc=%d stderr=%s"
                    % (flag, value, r.returncode, r.stderr.strip()))
        # A misspelt field loads (Koordinator ignores it) but is named, with the right one.
        threshold = os.path.join(config_dir, "resource-threshold-config")
        with open(threshold) as f:
            kept = f.read()
        with open(threshold, "w") as f:
            json.dump({"clusterStrategy": {"cpuSupressThresholdPercent": 60}}, f)
        r = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=60)
        c.check(r.returncode == 0 and "did you mean cpuSuppressThresholdPercent?" in r.stderr,
                "--check-config names a misspelt field: rc=%d stderr=%s"
                % (r.returncode, r.stderr.strip()))
        with open(threshold, "w") as f:
            f.write(kept)
        # The same check must catch a bad value, or the pass above proves nothing.
        with open(os.path.join(config_dir, "colocation-config")) as f:
            bad = json.load(f)
        bad["cpuReclaimThresholdPercent"] = -150
        with open(os.path.join(config_dir, "colocation-config"), "w") as f:
            json.dump(bad, f)
        r = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=60)
        c.check(r.returncode == 2 and "cpuReclaimThresholdPercent" in r.stderr,
                "--check-config rejects cpuReclaimThresholdPercent -150: rc=%d stderr=%s"
                % (r.returncode, r.stderr.strip()))
