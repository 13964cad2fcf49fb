"""The live demo's terminal view: a table redrawn every second on a terminal, plain progress
lines otherwise (CI, pipes), and the final summary."""
import os
import time

import pods

GIB = float(1 << 30)


class Sampler:
    """Per-second rates: node CPU from /proc/stat, LS and BE CPU from their cgroups."""

    def __init__(self, cg, be_rel, ls_rel):
        self.cg, self.be_rel, self.ls_rel = cg, be_rel, ls_rel
        self.prev = self._read()

    def _read(self):
        with open("/proc/stat") as f:
            fields = [int(x) for x in f.readline().split()[1:]]
        busy = sum(fields) - fields[3] - (fields[4] if len(fields) > 4 else 0)
        tick = os.sysconf("SC_CLK_TCK")
        return (time.monotonic(), busy / tick, self.cg.cpu_seconds(self.be_rel),
                self.cg.cpu_seconds(self.ls_rel))

    def sample(self):
        cur = self._read()
        dt = max(cur[0] - self.prev[0], 1e-3)
        node, be, ls = ((cur[i] - self.prev[i]) / dt for i in (1, 2, 3))
        self.prev = cur
        return {"node": node, "be": be, "ls": ls,
                "be_allowed": self.cg.cpu_quota_cores(self.be_rel),
                "be_mem": self.cg.memory_bytes(self.be_rel)}


class Frame:
    def __init__(self, **kw):
        self.__dict__.update(kw)


def bar(done, total, width=40):
    n = int(width * min(max(done / total, 0), 1))
    return "[" + "#" * n + "." * (width - n) + "]"


def fmt_step(r):
    if not r:
        return "no step finished yet"
    p99 = "n/a" if r.get("p99") is None else "%.1f ms" % r["p99"]
    return "%.0f req/s, p99 %s (%d conns)" % (r["rps"], p99, r["conns"])


def lines(f):
    s, m = f.sample, f.metrics
    cpus = os.cpu_count()
    batch_cpu = m.get("gleaner_batch_cpu_allocatable_cores")
    batch_mem = m.get("gleaner_batch_memory_allocatable_bytes")
    batch = ("%.2f cores, %.1f GiB" % (batch_cpu, (batch_mem or 0) / GIB)
             if batch_cpu is not None else "n/a (agent starting)")
    if f.node:
        sched = "scheduler: %s %s, %d m reported" % (
            f.node["name"], f.node["health"], f.node["batch"]["cpuMillicores"])
    else:
        sched = "scheduler: no report yet"
    allowed = "unlimited" if s["be_allowed"] is None else "%.2f cores" % s["be_allowed"]
    # From the besteffort cgroup itself: the agent's gleaner_be_suppress_active gauge is
    # not filled in yet (always 0).
    suppress = "off" if s["be_allowed"] is None else "ACTIVE"
    writes = m.get('gleaner_cgroup_writes_total{resource="cpu_quota"}', 0)
    rest = max(s["node"] - s["be"] - s["ls"], 0)
    out = [
        "Gleaner live run, phase %d/2: %s" % (f.phase, f.title),
        "%s %4.0fs / %.0fs" % (bar(f.elapsed, f.total), min(f.elapsed, f.total), f.total),
        "",
        " LS web load        step %d/%d: %d wrk connections   last step: %s" % (
            f.step, f.steps, f.conns, fmt_step(f.last)),
        " node CPU           %.2f of %d cores busy   (LS web %.2f, BE %.2f, rest of machine %.2f)"
        % (s["node"], cpus, s["ls"], s["be"], rest),
        " batch allocatable  %-22s %s" % (batch, sched),
        " BE CPU             allowed %-12s used %.2f cores   %d executors, %.0f MiB" % (
            allowed, s["be"], f.executors, s["be_mem"] / (1 << 20)),
        " suppression        %-8s %d BE quota writes by the agent in this phase" % (
            suppress, writes),
        " evictions          %d" % f.evictions,
    ]
    if f.events:
        out += ["", " events:"] + ["   " + e for e in f.events[-4:]]
    return out


class Ui:
    def __init__(self, tty):
        self.tty = tty
        self.last_plain = -10.0

    def render(self, frame):
        if self.tty:
            print("\033[H\033[2J" + "\n".join(lines(frame)), flush=True)
            return
        if frame.elapsed - self.last_plain < 5:
            return
        self.last_plain = frame.elapsed
        s, m = frame.sample, frame.metrics
        allowed = "unl" if s["be_allowed"] is None else "%.2f" % s["be_allowed"]
        batch = m.get("gleaner_batch_cpu_allocatable_cores")
        print("[%3.0fs/%.0fs] phase %d  conns %2d  node %.2f  LS %.2f  BE used %.2f allowed %s"
              "  batch-cpu %s  evictions %d" % (
                  frame.elapsed, frame.total, frame.phase, frame.conns, s["node"], s["ls"],
                  s["be"], allowed, "n/a" if batch is None else "%.2f" % batch, frame.evictions),
              flush=True)

    def done(self):
        print()


def worst(steps):
    vals = [r["p99"] for r in steps if r.get("p99") is not None]
    return max(vals) if vals else None


def mean(steps):
    vals = [r["p99"] for r in steps if r.get("p99") is not None]
    return sum(vals) / len(vals) if vals else None


def ms(v):
    return "n/a" if v is None else "%.1f ms" % v


def print_summary(phases, evictions, cpus, run_dir, memory=((), ())):
    """`memory`: the memory phase's table lines and its lines of the verdict."""
    a, b = phases
    print("== Summary (measured on this machine in this run: %d CPUs)" % cpus)
    print(" LS web latency per load step (wrk, same load profile in both phases)")
    print("   %-16s %-28s %s" % ("wrk connections", "BE unmanaged", "with Gleaner"))
    for ra, rb in zip(a["steps"], b["steps"]):
        print("   %-16d %5.0f req/s  p99 %-11s %5.0f req/s  p99 %s" % (
            ra["conns"], ra["rps"], ms(ra.get("p99")), rb["rps"], ms(rb.get("p99"))))
    print(" LS p99, worst step       %-12s unmanaged   %s with Gleaner" % (
        ms(worst(a["steps"])), ms(worst(b["steps"]))))
    print(" LS p99, mean of steps    %-12s unmanaged   %s with Gleaner" % (
        ms(mean(a["steps"])), ms(mean(b["steps"]))))
    print(" BE CPU harvested         %.1f cpu-s with Gleaner (cpuSuppressMode %s) in %.0f s"
          " (%.2f cores on average); %.1f cpu-s unmanaged" % (
              b["be_cpu_s"], pods.SHIPPED_MODE, b["seconds"], b["be_cpu_s"] / b["seconds"],
              a["be_cpu_s"]))
    print(" LS web CPU               %.1f cpu-s unmanaged, %.1f cpu-s with Gleaner" % (
        a["ls_cpu_s"], b["ls_cpu_s"]))
    print(" suppress reactions       %d BE quota writes; evictions %d" % (
        b["quota_writes"], evictions))
    print(" batch-cpu offered        %s (the scheduler's Node value at the end of each step,"
          " with Gleaner)" % ", ".join(
              "%d conns: %s" % (r["conns"], "n/a" if r.get("batch_milli") is None
                                else "%.2f cores" % (r["batch_milli"] / 1000.0))
              for r in b["steps"]))
    for line in memory[0]:
        print(line)
    for line in verdict(a, b) + list(memory[1]):
        print(" " + line)
    print(" logs                     %s (agent.log, scheduler.log, wrk-*.txt)" % run_dir)


# Differences smaller than this are within what one run on a shared machine repeats.
NOISE = 0.10


def verdict(unmanaged, managed):
    """What this run showed, in plain words, including when Gleaner showed no benefit."""
    out = ["What this run showed:"]
    before, after = mean(unmanaged["steps"]), mean(managed["steps"])
    if before is None or after is None:
        out.append("  LS latency: not measured (wrk reported no percentiles).")
    elif after < before * (1 - NOISE):
        out.append("  LS latency: better with Gleaner (mean step p99 %.1f -> %.1f ms)." % (
            before, after))
    elif after > before * (1 + NOISE):
        out.append("  LS latency: NO benefit in this run: mean step p99 was %.1f ms with Gleaner"
                   " against %.1f ms unmanaged. One short run on a shared machine moves p99 by"
                   " more than BE does; docs/benchmarks.md has repeated measurements." % (
                       after, before))
    else:
        out.append("  LS latency: no clear difference in this run (mean step p99 %.1f ms"
                   " unmanaged, %.1f ms with Gleaner; within %d%%)." % (
                       before, after, NOISE * 100))
    offered = sorted((r["conns"], r["batch_milli"]) for r in managed["steps"]
                     if r.get("batch_milli") is not None)  # by wrk connections
    listing = ", ".join("%.2f at %d" % (m / 1000.0, c) for c, m in offered)
    if len(offered) < 3:
        # Two values differ by chance as often as by load: a trend needs more steps.
        out.append("  Batch capacity: too few load steps to read a trend (%s cores at "
                   "connections)." % (listing or "none"))
    elif all(b[1] <= a[1] for a, b in zip(offered, offered[1:])) and (
            offered[-1][1] < offered[0][1] * (1 - NOISE)):
        out.append("  Batch capacity: the scheduler offered less at every higher LS load "
                   "(%s cores at connections): it shrinks as LS load grows." % listing)
    else:
        out.append("  Batch capacity: no steady shrink with LS load in this run (%s cores at "
                   "connections)." % listing)
    out.append("  " + trade(unmanaged, managed))
    return out


def trade(unmanaged, managed):
    """What Gleaner traded in this run: the BE harvest with it as a share of BE's unmanaged,
    against the LS p99 (mean of steps) of each. A harvest lost without a measurably better
    p99 is called a loss; a p99 difference within NOISE is not a benefit."""
    got, had = managed["be_cpu_s"], unmanaged["be_cpu_s"]
    after, before = mean(managed["steps"]), mean(unmanaged["steps"])
    if had <= 0.0:
        return ("BE harvest: %.1f cpu-s with Gleaner; NOT compared (BE used no CPU "
                "unmanaged)." % got)
    ratio = got / had
    head = ("BE harvest: Gleaner harvested %.0f%% of what BE got unmanaged (%.1f of %.1f "
            "cpu-s)" % (100.0 * ratio, got, had))
    if before is None or after is None:
        return head + "; LS p99 not measured: NOT a trade this run can judge."
    p99 = "LS p99 %.1f ms with Gleaner, %.1f ms unmanaged" % (after, before)
    better = after < before * (1 - NOISE)
    worse = after > before * (1 + NOISE)
    lost = ratio < 1 - NOISE
    if better and lost:
        return "%s for an LS p99 %.0f%% lower (%s): a trade of harvest for latency." % (
            head, 100.0 * (1 - after / before), p99)
    if better:
        return "%s and LS p99 was %.0f%% lower (%s): a gain on this run." % (
            head, 100.0 * (1 - after / before), p99)
    if lost or worse:
        return "%s and LS p99 was %s (%s): a loss on this run." % (
            head, "worse" if worse else "not measurably better", p99)
    return "%s and LS p99 was not measurably different (%s; within %d%%): %s on this run." % (
        head, p99, NOISE * 100, "more harvest at the same latency, a gain" if
        ratio > 1 + NOISE else "no cost and no benefit")
