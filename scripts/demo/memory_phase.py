"""The live demo's memory phase: what Gleaner does when batch work grows towards the node's
memory, on any machine (it does not hinge on CPU noise).

A scratch node of NODE_MIB MiB: the memory limit of the scratch kubepods cgroup, the memory
capacity in the node file the agent reads, and the MemTotal of a proc root made for the agent
(the machine's own /proc files, but a meminfo whose MemAvailable is what the scratch kubepods
leaves). An LS "cache" pod holds LS_MIB; three BE executors grow at a steady rate until,
together, they would not fit. OOM scores are kubelet's: BE 1000, the burstable LS pod by its
request. Run twice:
  - BE unmanaged (agent --no-enforce): the kubepods cgroup reaches its limit and the kernel's
    OOM killer kills processes (SIGKILL, work lost);
  - with Gleaner: the agent evicts BE executors, lowest priority first, once the node is at
    memoryEvictThresholdPercent (70 %); the node stays below its limit and nothing is killed.
"""
import os
import signal
import time

from node_proc import NodeProc
from pods import pod_json, write_agent_files, write_json

HERE = os.path.dirname(os.path.abspath(__file__))
PY = "/usr/bin/python3"
MIB = 1 << 20
NODE_MIB = 1024
LS = ("cache-0", "demo-cache-0", 200)  # name, uid, MiB held
LS_REQUEST_MIB = 256
BE = [("mem-1", "demo-mem-1", 5900), ("mem-2", "demo-mem-2", 5500),
      ("mem-3", "demo-mem-3", 5100)]  # name, uid, priority (the lowest is evicted first)
BE_START_MIB, BE_MAX_MIB, BE_GROW_MIB_PER_S = 48, 360, 20
EVICT_THRESHOLD_PERCENT = 70  # the demo's resource-threshold-config
KUBEPODS = "kubepods"
MIN_SECONDS = 15  # unmanaged, the executors outgrow the node in about 11 s


def ls_dir():
    return "kubepods/burstable/pod" + LS[1]


def be_dir(uid):
    return "kubepods/besteffort/pod" + uid


CONFIG_DIR = "ack-slo-config-memory"
NODE_FILE = "node-memory.json"


def write_files(run_dir):
    """The scratch node's Node file, and the agent's configuration for this phase: memory
    eviction on; CPU eviction off, so that a busy machine's CPU contention does not evict the
    executors before their memory does."""
    write_agent_files(run_dir, CONFIG_DIR, NODE_FILE, "%dMi" % NODE_MIB, cpu_evict=False)


def write_pods(run_dir, running):
    items = [pod_json(LS[0], "cache", LS[1], "Burstable",
                      {"cpu": "100m", "memory": "%dMi" % LS_REQUEST_MIB})]
    for name, uid, prio in BE:
        if name in running:
            items.append(pod_json(name, "spark", uid, "BestEffort",
                                  {"kubernetes.io/batch-cpu": "100",
                                   "kubernetes.io/batch-memory": "%dMi" % BE_MAX_MIB},
                                  {"koordinator.sh/qosClass": "BE", "spark-role": "executor"},
                                  prio))
    write_json(os.path.join(run_dir, "pods.json"), {"kind": "PodList", "items": items})


def set_oom_score_adj(pid, value):
    try:
        with open("/proc/%d/oom_score_adj" % pid, "w") as f:
            f.write(str(value))
    except OSError:
        pass  # gone already


def run(demo, title, enforce, seconds):
    """One run of the phase; returns what it measured."""
    cg = demo.cg
    cg.mkdir(ls_dir())
    for _, uid, _ in BE:
        cg.mkdir(be_dir(uid))
    cg.set_memory_limit(KUBEPODS, NODE_MIB * MIB)
    oom_before = cg.oom_kills(KUBEPODS)
    node_proc = NodeProc(os.path.join(demo.run_dir, "proc"), NODE_MIB,
                         lambda: cg.memory_working_set(KUBEPODS))
    node_proc.start()
    procs = {}
    try:
        p = demo.spawn(LS[0], [PY, os.path.join(HERE, "mem_hog.py"), "--start-mib", str(LS[2]),
                               "--tag", demo.run_dir], "memory.log", ls_dir())
        # kubelet's score for a burstable pod: 1000 - 1000 * request / capacity.
        set_oom_score_adj(p.pid, 1000 - 1000 * LS_REQUEST_MIB // NODE_MIB)
        procs[LS[0]] = p
        for name, uid, _ in BE:
            p = demo.spawn(name, [PY, os.path.join(HERE, "mem_hog.py"), "--start-mib",
                                  str(BE_START_MIB), "--grow-mib-per-s", str(BE_GROW_MIB_PER_S),
                                  "--max-mib", str(BE_MAX_MIB), "--tag", demo.run_dir],
                           "memory.log", be_dir(uid))
            set_oom_score_adj(p.pid, 1000)
            procs[name] = p
        running = {name for name, _, _ in BE}
        write_pods(demo.run_dir, running)
        demo.new_evictions()  # from here on, only this run's
        demo.start_agent(enforce, proc_root=node_proc.root, node_file=NODE_FILE,
                         config_dir=CONFIG_DIR)
        evicted, killed, peak = [], [], 0.0
        start = time.monotonic()
        while time.monotonic() - start < seconds:
            time.sleep(0.25)
            for name, reason in demo.new_evictions():
                if name in running and reason.startswith("memory-evict"):
                    running.discard(name)
                    write_pods(demo.run_dir, running)
                    demo.stop(name, grace_s=1)
                    evicted.append(name)
            for name, p in procs.items():
                if name not in killed and name not in evicted and p.poll() == -signal.SIGKILL:
                    killed.append(name)
                    running.discard(name)
            peak = max(peak, cg.memory_working_set(KUBEPODS) / (NODE_MIB * MIB))
            if demo.tty:
                print("\r  %-44s %4.0fs  node memory %3.0f%% (peak %3.0f%%)  evicted %d  "
                      "OOM-killed %d " % (title, time.monotonic() - start,
                                         100 * cg.memory_working_set(KUBEPODS) /
                                         (NODE_MIB * MIB), 100 * peak, len(evicted),
                                         len(killed)), end="", flush=True)
        if demo.tty:
            print()
        # Processes that died of a SIGKILL the demo did not send: the kernel's OOM killer
        # (the kubepods cgroup's own counter misses its children's on cgroup v1).
        return {"title": title,
                "oom_kills": max(len(killed), cg.oom_kills(KUBEPODS) - oom_before),
                "killed": killed, "evicted": evicted, "peak": peak,
                "ls_alive": procs[LS[0]].poll() is None}
    finally:
        demo.stop("agent")
        for name in list(procs):
            demo.stop(name, grace_s=1)
        for rel in [ls_dir()] + [be_dir(uid) for _, uid, _ in BE]:
            cg.rmdir(rel)
        cg.set_memory_limit(KUBEPODS, None)
        node_proc.stop()


def summary(unmanaged, managed):
    """The phase's lines of the demo's summary, and what it showed in plain words."""
    def row(r):
        return "peak %3.0f%% of the node; kernel OOM kills %d%s; agent evictions %d; LS %s" % (
            100 * r["peak"], r["oom_kills"],
            " (%s)" % ", ".join(r["killed"]) if r["killed"] else "", len(r["evicted"]),
            "alive" if r["ls_alive"] else "KILLED")
    table = [" Memory (a scratch node of %d MiB: LS cache %d MiB, three BE executors growing "
             "%d MiB/s each)" % (NODE_MIB, LS[2], BE_GROW_MIB_PER_S),
             "   BE unmanaged    " + row(unmanaged),
             "   with Gleaner    " + row(managed)]
    out = []
    # Gleaner's part is the agent's eviction at the threshold: a managed half that never
    # reached it (or evicted nothing) shows nothing about Gleaner, however the halves differ.
    reached = managed["peak"] * 100 >= EVICT_THRESHOLD_PERCENT or managed["evicted"]
    if managed["oom_kills"] > 0 or not managed["ls_alive"]:
        out.append("  Memory: NO benefit in this run: the kernel still OOM-killed %d process(es)"
                   " with Gleaner (agent.log says what it saw)." % managed["oom_kills"])
    elif not reached:
        out.append("  Memory: inconclusive: with Gleaner the node's memory peaked at %.0f%%, "
                   "short of the agent's %d%% eviction threshold, so this run did not exercise "
                   "it." % (100 * managed["peak"], EVICT_THRESHOLD_PERCENT))
    elif unmanaged["oom_kills"] > 0 or not unmanaged["ls_alive"]:
        out.append("  Memory: better with Gleaner: unmanaged, the kernel OOM-killed %d "
                   "process(es) at the node's limit; with Gleaner the agent evicted %d BE "
                   "executor(s) at %d%% and the kernel killed none." % (
                       unmanaged["oom_kills"], len(managed["evicted"]),
                       EVICT_THRESHOLD_PERCENT))
    else:
        out.append("  Memory: no difference in this run: the executors did not reach the "
                   "node's limit unmanaged either (peak %.0f%%)." % (100 * unmanaged["peak"]))
    return table, out
