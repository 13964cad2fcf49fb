"""The fleet part of `make demo`: ACK One's Spark job distribution, submitted to a hub.

A hub and two member clusters (each the project's test API server), gleaner-scheduler with
the hub and both members (--hub, --cluster, the colocation webhook serving every member at
/mutate-pod/<member>, agent reports over HTTPS checked by TokenReview against the report's
member), and the Spark operator emulator (test/spark) in each member as its operator and
kubelet. The user's side is kubectl against the hub, with the objects the ACK One guide
applies: the PriorityClass low-priority (-1000), its ClusterPropagationPolicy, the
PropagationPolicy sparkapp-policy (customSchedulingType Gang, replicaSchedulingType
Divided) and SparkApplications carrying sparkoperator.k8s.io/koordinator-colocation: "true"
and no schedulerName.

m1-n1 is a REAL node (fleet_node.py): its pods run as processes in kubelet's cgroups under
a scratch hierarchy, an LS service "web" runs there, and gleaner-agent in its production
mode reports its batch room. m1-n2 (a node whose kubelet never starts pods) and m2-n1 are
REPORT-DRIVEN: the demo posts their NodeReports as their agents would (docs/wire-format.md,
over HTTPS with each node's own agent token, every 2 s) with the batch room the story needs;
their pods run no process.

The story, each step waited for with a bounded deadline and timed:
  1. spark-pi-1 (driver + 2 executors, sized to half the batch room m1-n1's agent reports)
     goes to m1, m2's report having less room; its executors use real CPU in BE cgroups;
  2. a real LS surge on m1-n1 (clients hammering "web"): the agent cuts the BE quota and
     its reports shrink m1's batch room; spark-pi-2, which fitted m1 before, goes to m2;
     spark-pi-1 keeps running (a shrink never deletes a running pod); then the same surge
     with the agent's threshold strategies switched off in its ack-slo-config (BE under
     kubelet's cgroups alone), for the LS p99 of both side by side;
  3. memory pressure on m1-n1 (a node of 8 GiB whose used memory is its pods'): one of
     spark-pi-1's executors' work grows in its BE cgroup past the memoryEvictThresholdPercent
     the story sets; gleaner-agent evicts it through the Eviction API and Spark replaces it;
  4. a node joins m1 whose kubelet never starts pods; spark-pi-3's driver is bound there,
     cannot start, is reclaimed after --driver-start-timeout and rescheduled;
  5. every application reaches COMPLETED on the hub.
The API servers, emulators and the load clients end with their stdin, which only the demo
holds: killed outright, the demo takes them along (the emulator stops its pods); the agent
and gleaner-scheduler name the run directory on their command lines, and the scratch
hierarchy is recorded, for the clean-up fallback.
"""
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import fleet_node  # noqa: E402
from fleet_cluster import DRIVER_START_TIMEOUT_S, RECLAIM_HOLD_S, read  # noqa: E402
from fleet_report import FleetReport  # noqa: E402
from fleet_node import FleetError, NotShown, free_port  # noqa: E402,F401 (live.py's, e2e's)
import summary  # noqa: E402

# spark-pi-1 leaves this much of m1-n1's batch room: spark-pi-2 fits it before the surge,
# also when the machine's other work takes some of it. spark-pi-3's driver goes to m1-n2
# in m1 because drivers go to the emptiest node (scheduler/core/placement_score.h, spread
# leaders).
PI1_LEAVES_MILLI = 800
PRE_SURGE_MIN_MILLI = 300
PI3_DRIVER_MILLI, PI3_EXECUTOR_MILLI = 1000, 500
# Each LS surge's load lasts at least this long, with Gleaner and unmanaged alike, and the
# LS p99 of the two is taken over this first stretch of each: the same load for as long.
SURGE_S = 8.0
# The story's steps: (key, what it shows, the step it needs shown first). A step whose
# precondition the machine does not give (NotShown) is reported and its dependents skipped;
# the rest of the story goes on.
STEPS = (
    ("placement", "1. spark-pi-1 placed by the batch room m1-n1's agent reports", None),
    ("surge", "2. an LS surge on m1-n1 shrinking m1's batch room", "placement"),
    ("unmanaged_surge", "2b. the same LS surge unmanaged", "surge"),
    ("eviction", "3. an executor evicted under memory pressure on m1-n1", "placement"),
    ("reclaim", "4. a driver that cannot start reclaimed", None),
    ("completion", "5. every application COMPLETED on the hub", None))


class Fleet(FleetReport):
    """The five steps of the story on the fleet's clusters (fleet_cluster.py)."""

    # --- the story -----------------------------------------------------------------------
    def submit(self, name, executors, driver_milli, executor_milli, run_s=None):
        self.kubectl("hub", "apply", "--validate=false", "-f", "-", stdin=read(
            "spark-pi.yaml").format(name=name, executors=executors, run_s="%.1f" % (
                run_s or self.run_s), driver_request="%dm" % driver_milli,
                executor_request="%dm" % executor_milli))
        self.jobs[name] = {"name": name, "members": [], "state": None, "executorsReplaced": 0,
                           "reclaimed": 0, "submitted": time.monotonic(),
                           "executorMilli": executor_milli,
                           "batchCpuMilli": driver_milli + executors * executor_milli}

    def placed(self, name, avoid=None):
        member = self.wait("%s placed by gleaner-scheduler" % name,
                           lambda: self.placement(name) not in (None, avoid) and
                           self.placement(name), deadline_s=60 + 3 * self.run_s)
        self.jobs[name]["members"].append(member)
        self.event("%s placed in %s%s; batch free m1 %.2f, m2 %.2f cores" % (
            name, member, "" if avoid else " (%.2f s after kubectl apply)" % (
                time.monotonic() - self.jobs[name]["submitted"]),
            self.batch_free("m1") / 1000.0, self.batch_free("m2") / 1000.0))
        return member

    def running_executors(self, member, name):
        return [p for p in self.pods(member, "spark-role=executor,sparkoperator.k8s.io/"
                                             "app-name=" + name)
                if (p.get("status") or {}).get("phase") == "Running"
                and not p["metadata"].get("deletionTimestamp")]

    def executor_uids(self):
        return {p["metadata"]["uid"] for p in self.pods(fleet_node.MEMBER, "spark-role=executor")}

    def run(self, partial=False):
        """The five steps; returns the summary's fleet part. `partial` (the demo): a step
        whose precondition the machine did not give is recorded in not_shown, with its
        dependents, and the story goes on; without it (the e2e tests) it raises NotShown."""
        self.start()
        for key, title, needs in STEPS:
            if needs and needs not in self.steps_shown:
                self.not_shown.append({"step": title, "reason": "it needs step %s, not shown" % (
                    next(t for k, t, _ in STEPS if k == needs).split(".")[0])})
                continue
            try:
                getattr(self, "step_" + key)()
                self.steps_shown.append(key)
            except NotShown as e:
                if not partial:
                    raise
                self.not_shown.append({"step": title, "reason": str(e)})
                self.event("NOT shown: %s: %s" % (title, e))
        self.check_gleaner()
        return self.summary()

    def step_placement(self):
        """1. spark-pi-1 sized from the batch room m1-n1's agent reports (all but
        PI1_LEAVES_MILLI of it); m2's report has less room than it asks."""
        node = self.node
        # The room the scheduler places by (the agent's latest report) and the batch-cpu
        # on the Node, which the kubelet admits by and the scheduler writes only when it
        # moved by more than --resource-diff-threshold: sized by the smaller, so that the
        # kubelet takes what the scheduler binds. Once the agent's usage average covers its
        # whole window: its first reports average over less, and the machine's other work
        # (a busy loop beside the run) enters them only later.
        room = self.precondition(
            "400m of batch room reported by %s's agent and on its Node, its usage averaged "
            "over %d s" % (fleet_node.NODE, fleet_node.AGGREGATE_S),
            lambda: time.monotonic() - node.agent_started > fleet_node.AGGREGATE_S and (
                lambda f: f if f >= 400 else None)(min(self.real_free() or 0,
                                                       self.node_batch_cpu())), 60,
            self.room_seen)
        self.real["batchFreeIdleMilli"] = room
        executor = max(100, (room - PI1_LEAVES_MILLI - 100) // 2 // 50 * 50)
        self.report("m1", "m1-n2", 0)
        self.report("m2", "m2-n1", 2 * executor)  # less than spark-pi-1 asks
        self.meter = fleet_node.ExecutorMeter(node, self.executor_uids)
        self.meter.start()
        self.latency = fleet_node.LatencyProbe(node.ls_port)
        self.latency.start()
        self.submit("spark-pi-1", 2, 100, executor, self.long_s)
        self.event("%s's agent reports %.2f cores of batch room; spark-pi-1 asks 0.1 + 2 x "
                   "%.2f, m2-n1 reports %.2f" % (fleet_node.NODE, room / 1000.0, executor / 1000.0,
                                                 (2 * executor) / 1000.0))
        first = self.first = self.placed("spark-pi-1")
        if first == "m1":
            self.shown.append("spark-pi-1 placed in m1, the member with batch room for it "
                              "(as m1-n1's agent reported it)")
        try:
            running = self.wait("spark-pi-1's 2 executors running in %s" % first,
                                lambda: (lambda r: r if len(r) == 2 else None)(
                                    self.running_executors(first, "spark-pi-1")))
        except FleetError as e:
            # What each of the app's pods was doing, so that a run which fails here says
            # which part (operator, webhook, scheduler, kubelet) did not do its own.
            raise FleetError("%s (its pods at the end: %s)" % (
                e, self.pod_states(first, "spark-pi-1"))) from None
        # The webhook made the annotated pods batch pods of gleaner-scheduler.
        pods = self.pods(first, "sparkoperator.k8s.io/app-name=spark-pi-1")
        routed = [p for p in pods if p["spec"].get("schedulerName") == "gleaner-scheduler" and
                  "kubernetes.io/batch-cpu" in p["spec"]["containers"][0]["resources"].get(
                      "requests", {})]
        self.event("webhook: %d of %d spark-pi-1 pods given gleaner-scheduler and batch-cpu" % (
            len(routed), len(pods)))
        if pods and len(routed) == len(pods):
            self.shown.append("the colocation webhook routed every annotated pod to "
                              "gleaner-scheduler with batch resources")
        # Real CPU in the executors' BE pod cgroups.
        dirs = [node.pod_dir(p) for p in running if p["spec"].get("nodeName") == fleet_node.NODE]
        started = time.monotonic()
        used = self.precondition(
            "0.2 s of CPU used by each spark-pi-1 executor in its BE cgroup",
            lambda: (lambda u: u if dirs and all(v >= 0.2 for v in u) else None)(
                [node.cpu_seconds(d) or 0 for d in dirs]), 30,
            lambda: "%s CPU-seconds, BE quota %s" % (
                [round(node.cpu_seconds(d) or 0, 2) for d in dirs], self.quota_seen()))
        self.real["executorCpuSecondsStep1"] = round(sum(used), 3)
        self.event("spark-pi-1's executors used %s CPU-seconds in %s/pod<uid> (%.1f s)" % (
            " + ".join("%.2f" % v for v in used), fleet_node.BE_QOS, time.monotonic() - started))
        self.shown.append("spark-pi-1's executors used real CPU in BE cgroups on m1-n1")

    def step_surge(self):
        """2. A real LS surge on m1-n1: the agent cuts BE's quota, its reports shrink m1's
        batch room below what spark-pi-2 needs (which fitted before); spark-pi-2 goes to
        m2; spark-pi-1 keeps running."""
        node, first = self.node, self.first
        quota = self.precondition(
            "the BE tier's quota at half a core or more before the surge",
            lambda: (lambda q: q if q is not None and q >= 0.5 else None)(
                node.cpu_quota_cores(fleet_node.BE_QOS)), 60, self.quota_seen)
        before = self.precondition(
            "%dm of batch room left on m1-n1 before the surge (the machine's other work takes "
            "some)" % PRE_SURGE_MIN_MILLI, lambda: (
                lambda f: f if f is not None and f >= PRE_SURGE_MIN_MILLI else None)(
                    self.real_free()), 60, self.room_seen)
        need2 = max(200, min(1000, before // 2 // 50 * 50))
        self.real.update(batchFreeBeforeSurgeMilli=before, beQuotaCoresBeforeSurge=quota,
                         sparkPi2Milli=need2)
        kept = {p["metadata"]["uid"] for p in self.running_executors(first, "spark-pi-1")}
        # The surge marked before the probe's first read: a read first would make the
        # current quota the run's lowest and the surge one that "found BE already held".
        self.probe = summary.ReactionProbe(node, fleet_node.BE_QOS)
        self.probe.surge()
        self.probe.start()
        be_cpu = node.cpu_seconds(fleet_node.BE_QOS)
        node.start_load()
        surge_at = time.monotonic()
        self.latency.phase = "surge"
        shrunk = self.wait("m1-n1's batch room below spark-pi-2's %dm under the surge" % need2,
                           lambda: (lambda f: f is not None and f < need2 and (f,))(
                               self.real_free()), 60)[0]
        self.real.update(batchFreeUnderSurgeMilli=shrunk,
                         batchShrinkSeconds=round(time.monotonic() - surge_at, 2))
        try:
            self.wait("the agent's BE quota cut after the surge", lambda: self.probe.reactions_ms,
                      20)
        except FleetError:
            pass  # said below: "no cut seen"
        self.probe.stop()
        self.real["suppressReactionsMs"] = [round(v, 1) for v in self.probe.reactions_ms]
        self.real["beQuotaCoresUnderSurge"] = self.probe.lowest
        self.event("LS surge on m1-n1: BE quota %.2f -> %s cores (%s); batch free %.2f -> "
                   "%.2f cores in %.1f s" % (
                       quota, "%.2f" % self.probe.lowest if self.probe.lowest is not None
                       else "?", "cut %.0f ms after the load started" % self.probe.reactions_ms[0]
                       if self.probe.reactions_ms else "no cut seen", before / 1000.0,
                       shrunk / 1000.0, self.real["batchShrinkSeconds"]))
        if self.probe.reactions_ms:
            self.shown.append("a real LS surge on m1-n1 met by the agent's BE quota cut")
        self.report("m2", "m2-n1", 3000)
        self.submit("spark-pi-2", 1, 100, need2 - 100)
        if self.placed("spark-pi-2") != first:
            self.shown.append("spark-pi-2, which fitted m1 before the surge, went to the other "
                              "member after m1's batch room shrank")
        still = {p["metadata"]["uid"] for p in self.running_executors(first, "spark-pi-1")}
        self.real["sparkPi1ExecutorsKeptAcrossSurge"] = bool(kept) and kept <= still
        if self.real["sparkPi1ExecutorsKeptAcrossSurge"]:
            self.shown.append("spark-pi-1 kept running across the shrink (no pod deleted)")
        self.real["surge"] = self.end_surge(surge_at, be_cpu, "surge")
        self.event("LS load stopped after %.1f s; LS p99 over its first %.0f s %.1f ms, BE used "
                   "%.2f cores" % (self.real["surge"]["loadSeconds"], SURGE_S,
                                   self.real["surge"]["lsP99Ms"],
                                   self.real["surge"]["beCores"]))

    def end_surge(self, surge_at, be_cpu, phase):
        """Ends the LS load started at `surge_at` once it has lasted SURGE_S (a surge as
        long as the other's, not a wait for anything); what it measured: the probe client's
        p99 over the first SURGE_S, the cores BE used while it lasted (`be_cpu`: the BE
        tier's CPU-seconds at its start)."""
        time.sleep(max(0.0, surge_at + SURGE_S - time.monotonic()))
        node = self.node
        node.stop_load()
        seconds = time.monotonic() - surge_at
        self.latency.phase = "after"
        window = self.latency.window(phase, SURGE_S)
        used = (node.cpu_seconds(fleet_node.BE_QOS) or 0.0) - (be_cpu or 0.0)
        return {"loadSeconds": round(seconds, 1), "lsP99Ms": round(
            summary.percentile(window, 99) or 0.0, 1), "lsRequests": len(window),
            "beCores": round(used / seconds, 2)}

    def step_unmanaged_surge(self):
        """2b. The same surge unmanaged: the agent's threshold strategies switched off in
        its ack-slo-config (resource-threshold-config enable: false, an SRE's edit) lift BE's
        quota; BE has kubelet's cgroups alone while the load lasts; then they are switched
        back on. The LS p99 of both surges, over the same first SURGE_S, side by side."""
        node = self.node
        node.agent.set_threshold(enable=False)
        self.wait("the BE tier's quota lifted with the agent's threshold strategies off",
                  lambda: node.cpu_quota_cores(fleet_node.BE_QOS) is None, 20)
        watch = summary.ReactionProbe(node, fleet_node.BE_QOS)
        watch.start()
        try:
            be_cpu = node.cpu_seconds(fleet_node.BE_QOS)
            node.start_load()
            surge_at = time.monotonic()
            self.latency.phase = "surgeUnmanaged"
            measured = self.end_surge(surge_at, be_cpu, "surgeUnmanaged")
        finally:
            watch.stop()
        # None: no limit on the BE tier at any read (every 2 ms) while the load lasted.
        measured["beQuotaCoresLowest"] = watch.lowest
        self.real["surgeUnmanaged"] = measured
        node.agent.set_threshold(enable=True)
        self.wait("the BE tier's quota back with the agent's threshold strategies on",
                  lambda: node.cpu_quota_cores(fleet_node.BE_QOS) is not None, 20)
        managed = self.real["surge"]
        self.event("the same surge unmanaged (resource-threshold-config enable: false, BE "
                   "quota %s): LS p99 %.1f ms over its first %.0f s, BE used %.2f cores; with "
                   "Gleaner %.1f ms, BE %.2f cores" % (
                       "never set" if watch.lowest is None else "down to %.2f" % watch.lowest,
                       measured["lsP99Ms"], SURGE_S, measured["beCores"], managed["lsP99Ms"],
                       managed["beCores"]))
        if watch.lowest is None and measured["lsRequests"] and managed["lsRequests"]:
            self.shown.append("the LS p99 of the same surge unmanaged (%.1f ms) beside it with "
                              "Gleaner (%.1f ms)" % (measured["lsP99Ms"], managed["lsP99Ms"]))

    def step_eviction(self):
        """3. Memory pressure on m1-n1: one of spark-pi-1's executors' work grows (a process
        in its container cgroup holding up to MEMORY_HOG_MIB) until the node's memory passes
        the memoryEvictThresholdPercent the story set; gleaner-agent evicts the largest BE
        user through the Eviction API, the pressure leaves with the pod, Spark replaces the
        executor."""
        first, node = self.first, self.node
        # After the surge, once the Node's batch-cpu (what m1-n1's kubelet admits against)
        # takes spark-pi-1 whole again: the scheduler binds the replacement by the agent's
        # latest report, and a Node still written from the surge's smaller reports would
        # make the kubelet refuse it (OutOfbatch-cpu) until Spark gives the job up.
        # The replacement then fits as soon as the victim's room is free (the scheduler's
        # free room on m1-n1 not below zero), and BE has CPU to grow the executor's work
        # (the agent holds BE at its floor while the machine is busy; its memory grows only
        # as fast as its CPU allows).
        # Bounded by what spark-pi-1 has left of its run (less the eviction's and the
        # replacement's time): an executor to grow must still be there after the wait.
        job = self.jobs["spark-pi-1"]
        held = job["batchCpuMilli"]
        left = int(min(60, job["submitted"] + self.long_s - time.monotonic() - 30))
        self.precondition(
            "m1-n1's Node batch-cpu back to spark-pi-1's %dm after the surge, the scheduler's "
            "free room there not below 0 and the BE tier's quota at half a core or more, "
            "while spark-pi-1 (a %.0f s run) has time left" % (held, self.long_s),
            lambda: self.node_batch_cpu() >= held and (self.real_free() or 0) >= 0 and (
                lambda q: q is None or q >= 0.5)(node.cpu_quota_cores(fleet_node.BE_QOS)),
            left, self.room_seen)
        running = [p for p in self.running_executors(first, "spark-pi-1")
                   if p["spec"].get("nodeName") == fleet_node.NODE]
        if not running:
            raise NotShown("spark-pi-1 has no running executor on %s to grow (%.0f s after "
                           "its submission, a %.0f s run)" % (
                               fleet_node.NODE, time.monotonic() - job["submitted"],
                               self.long_s))
        victim = running[0]
        vname, vuid = victim["metadata"]["name"], victim["metadata"]["uid"]
        newest = max(int(p["metadata"]["labels"]["spark-exec-id"]) for p in running)
        before = self.wait("the agent's metrics answering", lambda: (
            lambda a: a is not None and [a])(node.agent_evictions()), 10)[0]
        threshold = fleet_node.NODE_MEMORY_MIB * fleet_node.MEMORY_EVICT_PERCENT / 100.0
        hog = node.start_memory_hog(victim)
        pressure_at = time.monotonic()
        self.event("%s's work grows by up to %d MiB in its BE cgroup on %s (a node of %d MiB, "
                   "memory eviction at %d%%: %.0f MiB)" % (
                       vname, fleet_node.MEMORY_HOG_MIB, fleet_node.NODE,
                       fleet_node.NODE_MEMORY_MIB, fleet_node.MEMORY_EVICT_PERCENT, threshold))
        try:
            self.wait("gleaner-agent's eviction of %s under memory pressure" % vname,
                      lambda: self.pod_gone(first, vname, vuid), 60)
            evicted_at = time.monotonic()
            after = self.wait("the agent's memory-evict count up", lambda: (
                lambda a: a and a.get("memory-evict", 0) > before.get("memory-evict", 0) and a)(
                    node.agent_evictions()), 10)
        except FleetError as e:
            # The pod still there, or gone without an eviction (spark-pi-1 ended first):
            # Gleaner's failure if the node's memory was over the threshold.
            raise self.below_threshold(
                "%s (spark-pi-1 %s)" % (e, self.state(first, "spark-pi-1")), pressure_at,
                threshold) or e from None
        # What the agent could have read up to then (its proc root's meminfo).
        peak, over = node.proc.between(pressure_at, evicted_at, threshold * (1 << 20))
        peak /= float(1 << 20)
        self.real.update(
            evictedPod=vname, nodeMemoryMiB=fleet_node.NODE_MEMORY_MIB,
            memoryEvictThresholdPercent=fleet_node.MEMORY_EVICT_PERCENT,
            nodeMemoryAtEvictionMiB=round(peak), nodeMemoryAtEvictionPercent=round(
                100.0 * peak / fleet_node.NODE_MEMORY_MIB, 1),
            pressureToEvictionSeconds=round(evicted_at - pressure_at, 2),
            overThresholdToEvictionSeconds=round(evicted_at - over, 2) if over else None,
            memoryEvictionsByAgent=after["memory-evict"] - before.get("memory-evict", 0))
        self.event("gleaner-agent evicted %s/%s (memory-evict) %.1f s after its work began to "
                   "grow; node memory %d MiB (%.1f%%) against the %d%% threshold, over it for "
                   "%s before the eviction was seen" % (
                       # The figures summary.json keeps, so that the two read the same.
                       first, vname, self.real["pressureToEvictionSeconds"],
                       self.real["nodeMemoryAtEvictionMiB"],
                       self.real["nodeMemoryAtEvictionPercent"],
                       fleet_node.MEMORY_EVICT_PERCENT, "%.2f s" % (evicted_at - over)
                       if over else "?"))
        # The grown work ends with the pod (kubelet removes its cgroup, and what is in it).
        self.wait("the evicted executor's grown work gone with its pod",
                  lambda: hog.poll() is not None, 40)
        # Spark never reuses an executor id: the replacement's is above every earlier one. The
        # scheduler keeps spark-pi-1 off m1-n1 (m1's only node that starts pods) for the
        # reclaim hold; a busy machine that shrinks the room restarts it: not shown, not failed.
        lowest_free = []

        def replaced():
            free = self.real_free()
            if free is not None:
                lowest_free[:] = [min(lowest_free + [free])]
            return [p for p in self.running_executors(first, "spark-pi-1")
                    if int(p["metadata"]["labels"].get("spark-exec-id", 0)) > newest]
        try:
            replacement = self.wait("a replacement executor for spark-pi-1 running", replaced)[0]
        except FleetError as e:
            if lowest_free and lowest_free[0] < job["executorMilli"]:
                raise NotShown("%s: m1-n1's free batch room fell to %dm, below the executor's "
                               "%dm, so the %d s reclaim hold restarted" % (
                                   e, lowest_free[0], job["executorMilli"],
                                   RECLAIM_HOLD_S)) from None
            raise
        self.jobs["spark-pi-1"]["executorsReplaced"] += 1
        replaced_s = time.monotonic() - evicted_at
        held = [e for e in self.api(first, "/api/v1/namespaces/spark/events")[1]["items"]
                if "was evicted there" in (e.get("message") or "")]
        self.real["reclaimHold"] = {
            "holdSeconds": RECLAIM_HOLD_S, "replacementNode": replacement["spec"]["nodeName"],
            "eventsNamingTheEviction": len(held),
            "lastEvent": held[-1]["message"] if held else None}
        self.event("spark-pi-1 kept off %s after the eviction (reclaim hold %d s; %d Event(s) "
                   "saying so), its replacement on %s" % (
                       fleet_node.NODE, RECLAIM_HOLD_S, len(held),
                       replacement["spec"]["nodeName"]))
        lower = fleet_node.MEMORY_EVICT_PERCENT - 2
        released = self.wait("m1-n1's memory back below %d%% (the eviction's lower mark)" % lower,
                             lambda: (lambda u: u < lower * fleet_node.NODE_MEMORY_MIB / 100.0
                                      and (u,))(node.memory_working_set("kubepods") / float(
                                          1 << 20)), 30)[0]
        self.real.update(replacementSeconds=round(replaced_s, 2),
                         nodeMemoryAfterPercent=round(
                             100.0 * released / fleet_node.NODE_MEMORY_MIB, 1))
        self.shown.append("an executor evicted by gleaner-agent under memory pressure on "
                          "m1-n1 (Eviction API), replaced by Spark %.1f s later, once m1-n1's "
                          "room had held for the %d s reclaim hold" % (replaced_s, RECLAIM_HOLD_S))
        self.event("spark-pi-1's replacement executor running %.2f s after the eviction; node "
                   "memory %.1f%%" % (replaced_s, self.real["nodeMemoryAfterPercent"]))

    def pod_gone(self, cluster, name, uid):
        """True once the pod `name` (uid `uid`) is deleted or being deleted."""
        status, obj = self.api(cluster, "/api/v1/namespaces/spark/pods/" + name)
        if status == 404:
            return True
        meta = (obj or {}).get("metadata") or {}
        return status == 200 and (meta.get("uid") != uid or bool(meta.get("deletionTimestamp")))

    def step_reclaim(self):
        """4. A node joins m1 whose kubelet never starts a pod; its agent reports room. m2's
        LS load rises for a while: its room takes spark-pi-3 only after the reclaim."""
        self.report("m1", "m1-n2", 4000)
        # m2 keeps too little room for spark-pi-3 (less than it asks without spark-pi-2).
        self.report("m2", "m2-n1", self.jobs.get("spark-pi-2", {"batchCpuMilli": 0})[
            "batchCpuMilli"] + 200)
        self.submit("spark-pi-3", 1, PI3_DRIVER_MILLI, PI3_EXECUTOR_MILLI)
        bad = self.placed("spark-pi-3")
        driver = self.wait("spark-pi-3's driver bound", lambda: [
            p for p in self.pods(bad, "spark-role=driver,sparkoperator.k8s.io/app-name="
                                      "spark-pi-3") if p["spec"].get("nodeName")])[0]
        self.event("spark-pi-3's driver bound to %s/%s, whose kubelet does not start it" % (
            bad, driver["spec"]["nodeName"]))
        bound_at = time.monotonic()
        if driver["spec"]["nodeName"] == "m1-n2":
            # The reclaim deletes the copy in the member; the hub then places the job again.
            self.wait("spark-pi-3 reclaimed from %s" % bad,
                      lambda: self.app(bad, "spark-pi-3") is None, 60 + 3 * self.run_s)
            self.jobs["spark-pi-3"]["reclaimed"] += 1
            self.event("spark-pi-3 reclaimed from %s %.1f s after its driver was bound "
                       "(driver start timeout %d s)" % (bad, time.monotonic() - bound_at,
                                                        DRIVER_START_TIMEOUT_S))
            self.report("m2", "m2-n1", 3000)
            self.placed("spark-pi-3", avoid=bad)
            self.shown.append("a driver that could not start reclaimed and rescheduled")
        else:
            self.shown.append("NOT shown: a driver reclaim (spark-pi-3's driver was bound to "
                              "%s, a node that starts pods)" % driver["spec"]["nodeName"])

    def step_completion(self):
        """5. Every job to its end, as the hub shows it."""
        for name, job in self.jobs.items():
            job["state"] = self.wait("%s COMPLETED on the hub" % name, lambda n=name: (
                self.state("hub", n) in ("COMPLETED", "FAILED") and self.state("hub", n)),
                deadline_s=60 + 3 * self.long_s)
            job["member"] = job["members"][-1]
            self.event("%s %s on the hub (ran in %s)" % (name, job["state"], job["member"]))
        done = sum(1 for j in self.jobs.values() if j["state"] == "COMPLETED")
        self.shown.append("%d of %d applications COMPLETED on the hub" % (done, len(self.jobs)))
        if self.meter:
            self.meter.stop()
            self.real["beCpuSecondsByExecutors"] = round(self.meter.seconds(), 2)
        if self.latency:
            self.latency.stop()
            self.ls_p99 = {phase: round(summary.percentile(ms, 99), 1)
                           for phase, ms in self.latency.ms.items()}
            self.event("LS p99 as a probe client saw it (a GET every 50 ms): %s" % ", ".join(
                "%s %.1f ms" % kv for kv in self.ls_p99.items()))

    def below_threshold(self, why, since, threshold_mib):
        """NotShown when m1-n1's memory stayed below `threshold_mib` since `since`: the
        grown work did not get there (it grows as fast as BE's CPU lets it, and a busy
        machine holds BE at its floor), so no eviction was due. None when it was over: a
        missing eviction is then Gleaner's failure."""
        peak, over = self.node.proc.between(since, time.monotonic(), threshold_mib * (1 << 20))
        if over is not None:
            return None
        return NotShown("%s; the node's memory peaked at %.0f MiB, below the %.0f MiB "
                        "threshold (BE quota %s)" % (why, peak / float(1 << 20), threshold_mib,
                                                      self.quota_seen()))
