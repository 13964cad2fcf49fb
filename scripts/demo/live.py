"""The live part of `make demo`: Gleaner on this machine's real cgroups for about two minutes.

A scratch kubepods tree (scratch.py) holds an LS "web" pod (web_server.py) under wrk load
that rises and falls, and three BE "Spark executor" pods (be_executor.py) that want every
CPU. gleaner-scheduler runs in reports-only mode and gleaner-agent reports to it. The CPU
part has two phases with the same load profile: the agent measuring only (--no-enforce, BE
unmanaged), then the agent enforcing cfsQuota suppression and CPU-satisfaction eviction.
The demo plays kubelet for the agent's evictions (it has no API server): the evicted
executor is killed and taken out of the pods file, and re-placed 20 s later. Then the
memory phase (memory_phase.py), unmanaged and with Gleaner, on a scratch node of 1 GiB.

usage: live.py --build DIR --run-dir DIR [--seconds N]      (the demo)
       live.py --cleanup DIR                                  (the shell trap's fallback)
"""
import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fleet  # noqa: E402
from fleet import free_port  # noqa: E402
import memory_phase  # noqa: E402
import scratch  # noqa: E402
import summary  # noqa: E402
from pods import NODE, pod_json, write_agent_files, write_json  # noqa: E402
import view  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
PY = "/usr/bin/python3"
WEB = {"name": "web-0", "ns": "web", "uid": "demo-web-0", "dir": "kubepods/burstable/poddemo-web-0"}
EXECUTORS = [  # name, uid, priority (koord-batch range; the lowest is evicted first)
    ("exec-1", "demo-exec-1", 5900), ("exec-2", "demo-exec-2", 5500),
    ("exec-3", "demo-exec-3", 5100)]
BE_QOS = "kubepods/besteffort"
PROFILE = [1, 2, 4, 6, 8, 6, 4, 2]  # wrk connections per load step: rises, then falls
REPLACE_AFTER_S = 20
GLEANER = ("agent", "scheduler")  # the demo's names of the Gleaner binaries it runs


class Interrupted(Exception):
    pass


def on_signal(signum, _frame):
    # One interruption is enough: further signals (a second ^C, the shell trap's SIGTERM)
    # must not cut the clean-up short.
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, signal.SIG_IGN)
    raise Interrupted(signal.Signals(signum).name)


def http_get(url, timeout=0.4):
    try:
        with urllib.request.urlopen(url, timeout=timeout) as r:
            return r.read().decode()
    except (OSError, ValueError):
        return None


def parse_metrics(text):
    out = {}
    for line in (text or "").splitlines():
        m = re.match(r"^([a-z_]+)(\{[^}]*\})?\s+(\S+)$", line)
        if m:
            out[m.group(1) + (m.group(2) or "")] = float(m.group(3))
    return out


def metric_sum(metrics, family):
    return sum(v for k, v in metrics.items() if k == family or k.startswith(family + "{"))


def parse_wrk(text):
    """requests/s and p99 in ms from `wrk --latency` output (None when absent)."""
    rps = re.search(r"Requests/sec:\s+([\d.]+)", text or "")
    p99 = re.search(r"^\s+99%\s+([\d.]+)(us|ms|s)\s*$", text or "", re.M)
    if not rps or not p99:
        return None
    scale = {"us": 0.001, "ms": 1.0, "s": 1000.0}[p99.group(2)]
    return {"rps": float(rps.group(1)), "p99": float(p99.group(1)) * scale}


class Demo:
    def __init__(self, args):
        self.args = args
        self.run_dir = args.run_dir
        self.bin = os.path.join(args.build, "bin")
        self.cg = scratch.Scratch(self.run_dir)
        self.procs = {}  # name -> Popen
        self.running_execs = {}  # name -> (uid, priority)
        self.evicted = {}  # name -> (uid, priority, when)
        self.events = []
        self.evictions = 0
        self.log_pos = 0
        self.sched_port, self.agent_port, self.web_port = free_port(), free_port(), free_port()
        self.probe = None  # times the agent's reactions to LS surges with Gleaner
        self.fleet = None
        self.failures = []  # Gleaner binaries that crashed or did not stop cleanly

    # --- set-up -------------------------------------------------------------------------
    def write_files(self):
        mem_kib = next(int(line.split()[1]) for line in open("/proc/meminfo")
                       if line.startswith("MemTotal:"))
        write_agent_files(self.run_dir, "ack-slo-config", "node.json", "%dKi" % mem_kib,
                          cpu_evict=True)
        with open(os.path.join(self.run_dir, "token"), "w") as f:
            f.write(os.urandom(16).hex())
        shutil.copy(os.path.join(HERE, "pace.lua"), os.path.join(self.run_dir, "pace.lua"))
        self.write_pods()

    def write_pods(self):
        items = [pod_json(WEB["name"], WEB["ns"], WEB["uid"], "Burstable",
                          {"cpu": "1", "memory": "256Mi"})]
        for name, (uid, prio) in sorted(self.running_execs.items()):
            items.append(pod_json(name, "spark", uid, "BestEffort",
                                  {"kubernetes.io/batch-cpu": "500",
                                   "kubernetes.io/batch-memory": "512Mi"},
                                  {"koordinator.sh/qosClass": "BE", "spark-role": "executor"},
                                  prio))
        write_json(os.path.join(self.run_dir, "pods.json"), {"kind": "PodList", "items": items})

    def spawn(self, name, argv, log, cgroup_rel=None):
        out = open(os.path.join(self.run_dir, log), "ab")
        preexec = self.cg.preexec(cgroup_rel) if cgroup_rel else self.cg.preexec_no_cgroup()
        p = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                             preexec_fn=preexec, start_new_session=True)
        out.close()
        self.procs[name] = p
        self.cg.remember_pid(p.pid)
        return p

    def start_executor(self, name, uid, prio):
        rel = "%s/pod%s" % (BE_QOS, uid)
        self.cg.mkdir(rel)
        self.spawn(name, [PY, os.path.join(HERE, "be_executor.py"), "--mem-mib", "96",
                          "--tag", self.run_dir], "executors.log", rel)
        self.running_execs[name] = (uid, prio)
        self.write_pods()

    def start_agent(self, enforce, proc_root="/proc", node_file="node.json",
                    config_dir="ack-slo-config"):
        self.stop("agent")
        argv = [os.path.join(self.bin, "gleaner-agent"), "run", "--node-name", NODE,
                "--cgroup-root", self.cg.root, "--pods-file", os.path.join(self.run_dir, "pods.json"),
                "--node-file", os.path.join(self.run_dir, node_file), "--proc-root", proc_root,
                "--config-dir", os.path.join(self.run_dir, config_dir),
                "--scheduler-url", "http://127.0.0.1:%d/api/v1/reports" % self.sched_port,
                "--token-file", os.path.join(self.run_dir, "token"),
                "--state-dir", os.path.join(self.run_dir, "state"),
                "--metrics-addr", "127.0.0.1:%d" % self.agent_port, "--resctrl-root",
                os.path.join(self.run_dir, "no-resctrl")]
        if not enforce:
            argv.append("--no-enforce")
        self.spawn("agent", argv, "agent.log")
        self.wait_for(lambda: http_get("http://127.0.0.1:%d/readyz" % self.agent_port) is not None,
                      "agent", "agent.log")

    def wait_for(self, condition, what, log, deadline_s=15):
        end = time.monotonic() + deadline_s
        while time.monotonic() < end:
            if condition():
                return
            if self.procs[what].poll() is not None:
                break
            time.sleep(0.1)
        tail = open(os.path.join(self.run_dir, log), errors="replace").read()[-1500:]
        raise RuntimeError("%s did not come up (log %s):\n%s" % (
            what, os.path.join(self.run_dir, log), tail))

    def stop(self, name, grace_s=5):
        p = self.procs.pop(name, None)
        if p is None:
            return
        exited = p.poll() is not None
        if not exited:
            p.terminate()  # the agent restores every cgroup value it changed on SIGTERM
            try:
                p.wait(grace_s)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        # Either Gleaner binary exits 0 on SIGTERM once it put back what it changed: one
        # that had already gone, or did not exit 0, failed (a crash, a knob maybe left).
        if name in GLEANER and (exited or p.returncode != 0):
            self.failures.append("gleaner-%s exited with status %d %s (log %s)" % (
                name, p.returncode, "before the demo stopped it" if exited else "when stopped",
                os.path.join(self.run_dir, name + ".log")))

    def setup(self):
        self.cg.create()
        self.write_files()
        for rel in ("kubepods/burstable", BE_QOS, WEB["dir"]):
            self.cg.mkdir(rel)
        self.spawn("scheduler", [os.path.join(self.bin, "gleaner-scheduler"), "run", "--listen",
                                 "127.0.0.1:%d" % self.sched_port, "--token-file",
                                 os.path.join(self.run_dir, "token"), "--stale-after", "10"],
                   "scheduler.log")
        self.wait_for(lambda: http_get("http://127.0.0.1:%d/healthz" % self.sched_port),
                      "scheduler", "scheduler.log")
        self.spawn("web", [PY, os.path.join(HERE, "web_server.py"), "--port", str(self.web_port),
                           "--tag", self.run_dir], "web.log", WEB["dir"])
        self.wait_for(lambda: http_get("http://127.0.0.1:%d/" % self.web_port), "web", "web.log")
        for name, uid, prio in EXECUTORS:
            self.start_executor(name, uid, prio)

    # --- evictions: the demo plays kubelet ----------------------------------------------
    def new_evictions(self):
        """(pod name, reason) of each eviction the agent asked for since the last call (with
        no API server, it logs them: the demo plays kubelet)."""
        try:
            with open(os.path.join(self.run_dir, "agent.log"), errors="replace") as f:
                f.seek(self.log_pos)
                text = f.read()
                self.log_pos = f.tell()
        except OSError:
            text = ""
        return [(pod.split("/")[-1], reason)
                for pod, reason in re.findall(r"would evict (\S+) \(([^)]*)\)", text)]

    def handle_evictions(self, now, phase_end):
        for name, _ in self.new_evictions():
            if name not in self.running_execs:
                continue
            uid, prio = self.running_execs.pop(name)
            self.write_pods()
            self.stop(name, grace_s=1)
            self.cg.rmdir("%s/pod%s" % (BE_QOS, uid))
            self.evicted[name] = (uid, prio, now)
            self.evictions += 1
            self.events.append("%5.0fs  agent evicted spark/%s (BE CPU satisfaction too low)"
                               % (now - self.t0, name))
        for name, (uid, prio, when) in list(self.evicted.items()):
            if now - when >= REPLACE_AFTER_S and phase_end - now > 5:
                del self.evicted[name]
                self.start_executor(name, uid, prio)
                self.events.append("%5.0fs  spark/%s re-placed on the node" % (now - self.t0, name))

    # --- the run ------------------------------------------------------------------------
    def run_phase(self, index, title, seconds, ui):
        steps = max(1, min(len(PROFILE), int(seconds // 2)))
        profile = [PROFILE[int(i * len(PROFILE) / steps)] for i in range(steps)]
        step_s = max(2, int(seconds // steps))
        results = []
        be_start = self.cg.cpu_seconds(BE_QOS)
        ls_start = self.cg.cpu_seconds(WEB["dir"])
        start = time.monotonic()
        phase_end = start + steps * step_s
        sampler = view.Sampler(self.cg, BE_QOS, WEB["dir"])
        for step, conns in enumerate(profile):
            if self.probe and (step == 0 or conns > profile[step - 1]):
                self.probe.surge()
            out = os.path.join(self.run_dir, "wrk-%d-%d.txt" % (index, step))
            with open(out, "wb") as f:
                wrk = subprocess.Popen(
                    ["wrk", "-t1", "-c%d" % conns, "-d%ds" % step_s, "--latency", "-s",
                     os.path.join(self.run_dir, "pace.lua"), "http://127.0.0.1:%d/" % self.web_port],
                    stdout=f, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                    preexec_fn=self.cg.preexec_no_cgroup(), start_new_session=True)
            self.procs["wrk"] = wrk
            self.cg.remember_pid(wrk.pid)
            next_tick = time.monotonic()
            batch_milli = None  # what the scheduler publishes as the step ends
            while wrk.poll() is None:
                next_tick += 1.0
                time.sleep(max(0.0, next_tick - time.monotonic()))
                now = time.monotonic()
                self.handle_evictions(now, phase_end)
                s = sampler.sample()
                metrics = parse_metrics(http_get("http://127.0.0.1:%d/metrics" % self.agent_port))
                nodes = json.loads(http_get("http://127.0.0.1:%d/api/v1/nodes" % self.sched_port)
                                   or '{"nodes":[]}')["nodes"]
                if nodes:
                    batch_milli = nodes[0]["batch"]["cpuMillicores"]
                ui.render(view.Frame(
                    phase=index, title=title, elapsed=now - self.t0, total=self.total,
                    conns=conns, step=step + 1, steps=steps, last=results[-1] if results else None,
                    sample=s, metrics=metrics, node=nodes[0] if nodes else None,
                    executors=len(self.running_execs), evictions=self.evictions,
                    events=self.events))
            self.procs.pop("wrk", None)
            r = parse_wrk(open(out, errors="replace").read())
            results.append(dict(r or {"rps": 0.0, "p99": None}, conns=conns,
                                batch_milli=batch_milli))
        metrics = parse_metrics(http_get("http://127.0.0.1:%d/metrics" % self.agent_port))
        return {"title": title, "steps": results, "seconds": time.monotonic() - start,
                "be_cpu_s": self.cg.cpu_seconds(BE_QOS) - be_start,
                "ls_cpu_s": self.cg.cpu_seconds(WEB["dir"]) - ls_start,
                "quota_writes": metrics.get('gleaner_cgroup_writes_total{resource="cpu_quota"}', 0),
                "reaction_buckets": summary.histogram_buckets(
                    metrics, "gleaner_be_suppress_reaction_seconds"),
                "batch_cpu": metrics.get("gleaner_batch_cpu_allocatable_cores")}

    def run(self):
        self.tty = sys.stdout.isatty()
        ui = view.Ui(self.tty)
        # A third of the run (at least MIN_SECONDS each) for the two memory runs; the rest
        # for the two CPU phases.
        memory_s = max(memory_phase.MIN_SECONDS, self.args.seconds / 6)
        cpu_s = max(2.0, (self.args.seconds - 2 * memory_s) / 2)
        self.total = 2 * cpu_s
        self.setup()
        print("scratch kubepods tree (cgroup %s): %s; cgroup root for the agent: %s" % (
            self.cg.version, " ".join(self.cg.bases), self.cg.root), flush=True)
        self.t0 = time.monotonic()
        self.start_agent(enforce=False)
        phases = [self.run_phase(1, "BE unmanaged (agent measuring only, --no-enforce)",
                                 cpu_s, ui)]
        self.start_agent(enforce=True)
        self.probe = summary.ReactionProbe(self.cg, BE_QOS)
        self.probe.start()
        phases.append(self.run_phase(2, "with Gleaner (cfsQuota suppress + eviction)", cpu_s, ui))
        self.probe.stop()
        ui.done()
        # The memory phase has its own pods: the CPU phase's go first.
        self.stop("agent")
        for name in [n for n in self.running_execs] + ["web"]:
            self.stop(name, grace_s=1)
        memory_phase.write_files(self.run_dir)
        print("memory phase: a scratch node of %d MiB, %.0f s unmanaged then %.0f s with "
              "Gleaner" % (memory_phase.NODE_MIB, memory_s, memory_s), flush=True)
        memory = [memory_phase.run(self, "memory, BE unmanaged", False, memory_s),
                  memory_phase.run(self, "memory, with Gleaner", True, memory_s)]
        fleet_doc, fleet_error = self.run_fleet()
        self.stop("scheduler")
        view.print_summary(phases, self.evictions, os.cpu_count(), self.run_dir,
                           memory_phase.summary(*memory))
        doc = summary.build(phases, self.evictions, memory, self.probe, fleet_doc, fleet_error)
        summary.print_fleet(doc, summary.write(self.run_dir, doc))
        if fleet_error:
            raise RuntimeError("the fleet scenario failed: " + fleet_error)
        if self.failures:
            raise RuntimeError("; ".join(self.failures))

    def run_fleet(self):
        """The fleet scenario (fleet.py) after the node's phases: (its summary, None) or
        (None, what went wrong)."""
        print("fleet: a hub and members m1, m2 (test API servers), gleaner-scheduler with the "
              "hub and the colocation webhook, the Spark operator emulator in each member",
              flush=True)
        self.fleet = fleet.Fleet(self.args.build, self.run_dir, self.cg.remember_pid,
                                 self.args.seconds, self.cg.remember_scratch)
        try:
            doc = self.fleet.run(partial=True)
        except (fleet.FleetError, OSError, subprocess.SubprocessError) as e:
            return None, str(e)
        finally:
            self.fleet.stop()
        return doc, "; ".join(self.fleet.stop_failures) or None

    def cleanup(self):
        if self.probe:
            self.probe.stop()
        if self.fleet:
            self.fleet.stop()
        for name in ["wrk", "agent"] + [n for n in list(self.procs) if n not in ("wrk", "agent")]:
            self.stop(name, grace_s=5)
        for base in self.cg.bases:
            scratch.kill_tree(base)
            scratch.remove_tree(base)
        scratch.cleanup_run_dir(self.run_dir)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--build", default="build")
    parser.add_argument("--run-dir")
    parser.add_argument("--seconds", type=int, default=120)
    parser.add_argument("--cleanup", metavar="RUN_DIR")
    args = parser.parse_args()
    if args.cleanup:
        scratch.cleanup_run_dir(args.cleanup)
        return 0
    if args.seconds < 8:
        parser.error("--seconds must be at least 8")
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, on_signal)
    demo = Demo(args)
    if demo.cg.version is None:
        print("live run skipped: " + demo.cg.error, file=sys.stderr)
        return 2
    try:
        demo.run()
        return 0
    except Interrupted as e:
        print("\ninterrupted (%s): cleaning up" % e, file=sys.stderr)
        return 130
    except RuntimeError as e:
        print("\nlive run failed: %s" % e, file=sys.stderr)
        return 1
    finally:
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # finish cleaning up even on a second ^C
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        demo.cleanup()


if __name__ == "__main__":
    sys.exit(main())
