"""summary.json of `make demo` and the fleet's lines of the printed summary; the probe
that times the agent's reactions to an LS surge on the live node."""
import json
import os
import threading
import time

import view


class ReactionProbe(threading.Thread):
    """Times each LS surge (the load starting on the idle node, or a load step with more
    wrk connections than the one before) to the agent's first cut of the BE tier's CFS
    quota after it, reading the BE cgroup's quota every 2 ms. A surge that finds BE already
    held at the lowest quota of the run needs no cut and is counted as held; one the agent
    did not cut for before the next counts as not reacted (the agent may judge the LS
    service within its target)."""

    POLL_S = 0.002

    def __init__(self, cg, be_rel):
        super().__init__(daemon=True)
        self.cg, self.be_rel = cg, be_rel
        self.lock = threading.Lock()
        self.surge_at = None
        self.last = None  # the quota at the previous read (None: unlimited)
        self.reactions_ms = []
        self.surges = 0
        self.held = 0  # surges that found BE already at the run's lowest quota
        self.lowest = None
        self.stopping = threading.Event()

    def surge(self):
        with self.lock:
            self.surges += 1
            self.last = self.cg.cpu_quota_cores(self.be_rel)
            if self.last is not None and self.lowest is not None and self.last <= self.lowest:
                self.held += 1
                self.surge_at = None
            else:
                self.surge_at = time.monotonic()

    def run(self):
        while not self.stopping.wait(self.POLL_S):
            with self.lock:
                quota = self.cg.cpu_quota_cores(self.be_rel)
                if quota is not None:
                    self.lowest = quota if self.lowest is None else min(self.lowest, quota)
                cut = quota is not None and (self.last is None or quota < self.last)
                if cut and self.surge_at is not None:
                    self.reactions_ms.append((time.monotonic() - self.surge_at) * 1000.0)
                    self.surge_at = None
                self.last = quota

    def stop(self):
        self.stopping.set()
        self.join(1)


def percentile(values, q):
    """The nearest-rank percentile (None for no values)."""
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, int(round(q / 100.0 * len(ordered))) - 1))]


def histogram_buckets(metrics, family):
    """A Prometheus histogram's cumulative buckets from parsed metrics ({'name{labels}':
    value}): [(upper bound in seconds, count)] by bound, +Inf last."""
    prefix = family + '_bucket{le="'
    return sorted((float(k[len(prefix):].split('"', 1)[0]), v)
                  for k, v in metrics.items() if k.startswith(prefix))


def histogram_upper_ms(buckets, q):
    """The bound in ms of the first bucket holding the q-th percentile of the observations
    (None without any; inf when it lies beyond the last finite bound)."""
    total = buckets[-1][1] if buckets else 0
    if total <= 0:
        return None
    return next(round(le * 1000.0, 3) for le, count in buckets if count >= q / 100.0 * total)


def agent_reactions(buckets):
    """summary.json's agentSuppressReactionsMs: the agent's own measure of its CPU-suppress
    reactions (gleaner_be_suppress_reaction_seconds: an LS task's run-queue wait beyond
    its target, timed by the kernel, to the BE cut written), as bucket bounds."""
    p50, p99 = histogram_upper_ms(buckets, 50), histogram_upper_ms(buckets, 99)
    return {"p50AtMost": p50, "p99AtMost": None if p99 == float("inf") else p99,
            "reactions": int(buckets[-1][1]) if buckets else 0}


def build(phases, live_evictions, memory, reactions, fleet, fleet_error):
    """The summary.json document. `memory`: the memory phase's two runs; `reactions`:
    the probe (None when it did not run); `fleet`: Fleet.summary() or None."""
    unmanaged, managed = phases
    ms = [round(v, 1) for v in reactions.reactions_ms] if reactions else []
    out = {
        "lsP99Ms": {
            "unmanaged": {"worstStep": view.worst(unmanaged["steps"]),
                          "meanOfSteps": view.mean(unmanaged["steps"])},
            "withGleaner": {"worstStep": view.worst(managed["steps"]),
                            "meanOfSteps": view.mean(managed["steps"])}},
        "beCpuSecondsHarvested": {"withGleaner": round(managed["be_cpu_s"], 2),
                                  "unmanaged": round(unmanaged["be_cpu_s"], 2),
                                  "withGleanerSeconds": round(managed["seconds"], 1)},
        "suppressReactionsMs": {"p50": percentile(ms, 50), "p99": percentile(ms, 99),
                                "reactions": len(ms),
                                "surges": reactions.surges if reactions else 0,
                                "heldAlready": reactions.held if reactions else 0},
        "agentSuppressReactionsMs": agent_reactions(managed.get("reaction_buckets")),
        "evictions": {"liveCpu": live_evictions,
                      "liveMemory": len(memory[1]["evicted"]) if memory else 0,
                      "fleet": fleet["evictions"] if fleet else 0},
        "jobs": [{k: j[k] for k in ("name", "member", "state", "executorsReplaced",
                                    "reclaimed")} for j in (fleet or {}).get("jobs", [])],
        "fleetRealNode": real_node_facts(fleet),
        "fleet": fleet, "fleetError": fleet_error,
    }
    out["evictions"]["total"] = sum(v for v in out["evictions"].values())
    return out


def real_node_facts(fleet):
    """What the fleet's real node (m1-n1) measured, for summary.json (None without a fleet
    run)."""
    if not fleet:
        return None
    real = fleet["realNode"]
    ms = real.get("suppressReactionsMs") or []
    return {"node": "%s/%s" % (real["member"], real["node"]),
            "beCpuSecondsByExecutors": real.get("beCpuSecondsByExecutors"),
            "suppressReactionsMs": {"p50": percentile(ms, 50), "p99": percentile(ms, 99),
                                    "reactions": len(ms)},
            "batchFreeMilli": {k: real.get("batchFree%s%sMilli" % (k[0].upper(), k[1:]))
                               for k in ("idle", "beforeSurge", "underSurge")},
            "batchShrinkSeconds": real.get("batchShrinkSeconds"),
            # A probe client's GET every 50 ms, per phase (quiet, surge, surgeUnmanaged, after)
            "lsP99Ms": fleet.get("lsP99Ms"),
            # The same LS surge with Gleaner and with the agent's threshold strategies off:
            # p99 over each one's first seconds, the cores BE used meanwhile (fleet.py)
            "surgeWithGleaner": real.get("surge"), "surgeUnmanaged": real.get("surgeUnmanaged"),
            "evictions": fleet["evictions"], "evictionKind": fleet["evictionKind"],
            # Step 3: the agent's memory eviction, as measured (fleet.py step_eviction)
            "memoryEviction": {k: real.get(k) for k in (
                "evictedPod", "nodeMemoryMiB", "memoryEvictThresholdPercent",
                "nodeMemoryAtEvictionMiB", "nodeMemoryAtEvictionPercent",
                "pressureToEvictionSeconds", "overThresholdToEvictionSeconds",
                "replacementSeconds", "reclaimHold", "nodeMemoryAfterPercent",
                "memoryEvictionsByAgent", "agentEvictionsByReason")}}


def surge_verdict(managed, unmanaged):
    """The fleet's LS surge with Gleaner beside the same surge unmanaged, in plain words: a
    benefit only beyond what one run repeats (view.NOISE), and never without both."""
    if not managed or not unmanaged or not managed["lsRequests"] or not \
            unmanaged["lsRequests"]:
        return "LS surge on m1-n1: NOT compared (a surge measured nothing)"
    if unmanaged.get("beQuotaCoresLowest") is not None:
        return ("LS surge on m1-n1: NOT compared (a BE quota of %.2f cores was in force "
                "during the unmanaged surge)" % unmanaged["beQuotaCoresLowest"])
    after, before = managed["lsP99Ms"], unmanaged["lsP99Ms"]
    figures = "p99 %.1f ms unmanaged (BE %.2f cores), %.1f ms with Gleaner (BE %.2f cores)" % (
        before, unmanaged["beCores"], after, managed["beCores"])
    if after < before * (1 - view.NOISE):
        return "LS surge on m1-n1: better with Gleaner (%s)" % figures
    if after > before * (1 + view.NOISE):
        return ("LS surge on m1-n1: NO benefit in this run (%s); a surge of seconds on a "
                "shared machine moves p99 by more than BE does" % figures)
    return "LS surge on m1-n1: no clear difference in this run (%s; within %d%%)" % (
        figures, view.NOISE * 100)


def na(value):
    """A figure a step not shown did not measure reads n/a, not None."""
    return "n/a" if value is None else value


def write(run_dir, doc):
    path = os.path.join(run_dir, "summary.json")
    with open(path, "w") as f:
        json.dump(doc, f, indent=1)
    return path


def print_fleet(doc, path):
    """The fleet's part of the printed summary and what the whole run did and did not show."""
    fleet, jobs = doc["fleet"], doc["jobs"]
    r = doc["suppressReactionsMs"]
    print(" suppress reaction        %s" % (
        "p50 %.1f ms, p99 %.1f ms over %d of %d LS surges (load step start -> BE quota cut)"
        % (r["p50"], r["p99"], r["reactions"], r["surges"]) if r["reactions"] else
        "NOT shown: no BE quota cut followed any of %d LS surges in this run" % r["surges"]))
    if r["heldAlready"]:
        print("                          %d surge(s) found BE already held at its lowest quota "
              "of the run (nothing to cut)" % r["heldAlready"])
    a = doc["agentSuppressReactionsMs"]
    print(" agent's reactions        %s" % (
        "p50 <= %s ms, p99 <= %s ms over %d BE cuts (an LS run-queue wait beyond its target, "
        "kernel-timed -> the cut written; gleaner_be_suppress_reaction_seconds)" % (
            "%g" % a["p50AtMost"], "%g" % a["p99AtMost"] if a["p99AtMost"] is not None else
            "> 1000", a["reactions"]) if a["reactions"] else
        "none: the agent cut BE for no LS run-queue wait beyond its target in this run"))
    if fleet:
        print(" Fleet (hub + members m1, m2; kubectl apply to the hub); real node: %s "
              "(pods as processes in BE/LS cgroups, gleaner-agent reporting); report-driven: "
              "%s (the demo posts their reports; their pods run no process)" % (
                  ", ".join(fleet["realNodes"]), ", ".join(fleet["reportDriven"])))
        for j in jobs:
            print("   %-12s %-10s in %s; executors replaced %d; reclaimed %d" % (
                j["name"], j["state"], j["member"], j["executorsReplaced"], j["reclaimed"]))
        for line in fleet["events"]:
            print("   " + line)
        real = doc["fleetRealNode"]
        r = real["suppressReactionsMs"]
        print("   real node %s: executors used %s BE CPU-seconds; suppress reaction %s; "
              "batch free %s -> %s millicores under the surge; LS p99 (probe client) %s; "
              "evictions %d (%s)" % (
                  real["node"], na(real["beCpuSecondsByExecutors"]),
                  "p50 %.1f ms, p99 %.1f ms (%d)" % (r["p50"], r["p99"], r["reactions"])
                  if r["reactions"] else "none seen", na(real["batchFreeMilli"]["beforeSurge"]),
                  na(real["batchFreeMilli"]["underSurge"]), ", ".join(
                      "%s %.1f ms" % kv for kv in (real["lsP99Ms"] or {}).items()) or "none",
                  real["evictions"], real["evictionKind"]))
    print(" Fleet and node, what this run showed and did not:")
    if fleet:
        print("  Fleet: %s." % "; ".join(fleet["shown"]))
        # Steps this machine could not give their preconditions: not a Gleaner failure.
        for step in fleet["notShown"]:
            print("  Not shown: fleet step %s: %s." % (step["step"], step["reason"]))
        real = doc["fleetRealNode"]
        print("  " + surge_verdict(real["surgeWithGleaner"], real["surgeUnmanaged"]) + ".")
    else:
        print("  Fleet: NOT shown: %s" % doc["fleetError"])
    print("  Not shown: m1-n2 and m2-n1 are report-driven (the demo posts their agents' "
          "reports and their pods run no process); m1-n1's memory is a node of its own size "
          "(its pods' use against its Node's memory, not this machine's), and the story sets "
          "its memory eviction threshold low so that 1 GiB makes pressure; the fleet's LS p99 "
          "is a probe client's, not under the live phases' wrk profile; its unmanaged "
          "surge is the same run with the agent's threshold strategies off for that surge "
          "(the agent still runs and reports).")
    print(" summary.json             %s" % path)
