#!/usr/bin/env python3
"""Cross-checks yield_bench with the kernel's own trace: reads `perf script` output of a
`perf sched record` taken around one yield_bench run, and prints the LS task's (comm
yield-ls) wake-up latency, sched_waking to the sched_switch that puts it on a CPU, as
p50/p99/max, split by what the CPU ran just before it (a BE spinner, another task, idle).

    perf sched record -o yield.data -- <build>/bench/yield_bench --configs a --rounds 1
    perf script -i yield.data -F comm,pid,cpu,time,event,trace | bench/yield/perf_wakeups.py
"""
import re
import sys

WAKING = re.compile(r"\s(\d+\.\d+):\s+sched:sched_waking: comm=(\S+) pid=(\d+)")
SWITCH = re.compile(
    r"\s(\d+\.\d+):\s+sched:sched_switch: prev_comm=(.+?) prev_pid=(\d+) .*"
    r"==> next_comm=(.+?) next_pid=(\d+)")
FORK = re.compile(r"sched:sched_process_fork: comm=(\S+) pid=(\d+) child_comm=\S+ child_pid=(\d+)")


def pct(values, p):
    if not values:
        return float("nan")
    values = sorted(values)
    return values[min(len(values) - 1, round(p * (len(values) - 1)))]


def main():
    waking = {}  # pid -> time of its pending wake-up
    ls_pids = set()
    bench_pids = set()  # yield_bench processes that fork (the benchmark itself)
    children = set()  # what they forked: BE spinners, and the LS process
    by_prev = {}  # class of the task switched out -> latencies (us)
    for line in sys.stdin:
        m = FORK.search(line)
        if m and m.group(1) == "yield_bench":
            bench_pids.add(int(m.group(2)))
            children.add(int(m.group(3)))
            continue
        m = WAKING.search(line)
        if m:
            t, comm, pid = float(m.group(1)), m.group(2), int(m.group(3))
            if comm == "yield-ls":
                ls_pids.add(pid)
                waking.setdefault(pid, t)
            continue
        m = SWITCH.search(line)
        if not m:
            continue
        t, prev_comm, prev_pid = float(m.group(1)), m.group(2), int(m.group(3))
        next_pid = int(m.group(5))
        # A waking of a task that was still on its CPU (it had not gone to sleep yet) is
        # not a wake-up: leaving the CPU drops it.
        if prev_pid in ls_pids:
            waking.pop(prev_pid, None)
        if next_pid in ls_pids and next_pid in waking:
            start = waking.pop(next_pid)
            if prev_pid in children and prev_pid not in bench_pids and prev_pid not in ls_pids:
                cls = "BE spinner"
            elif prev_pid in bench_pids:
                cls = "the benchmark's own process"
            elif prev_comm.startswith("swapper"):
                cls = "idle"
            else:
                cls = "other work"
            by_prev.setdefault(cls, []).append((t - start) * 1e6)
    every = [v for vs in by_prev.values() for v in vs]
    print("| ran before LS | wake-ups | p50 us | p99 us | max us |")
    print("|---|---|---|---|---|")
    for cls, vs in sorted(by_prev.items()) + [("all", every)]:
        print(f"| {cls} | {len(vs)} | {pct(vs, 0.5):.1f} | {pct(vs, 0.99):.1f} | {max(vs):.0f} |")


if __name__ == "__main__":
    main()
