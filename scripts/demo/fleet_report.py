"""What the fleet story tells at the end: the figures it read last for a step not shown, the
kind of eviction seen, and summary.json's fleet part (fleet.py runs the story's steps)."""
import fleet_node
from fleet_cluster import REPORT_DRIVEN, FleetCluster


class FleetReport(FleetCluster):
    def pod_states(self, member, name):
        """Each of an app's pods in `member`: its phase, node and whether it is deleting."""
        return "; ".join("%s %s on %s%s" % (
            p["metadata"]["name"], (p.get("status") or {}).get("phase"),
            p["spec"].get("nodeName") or "no node",
            " deleting" if p["metadata"].get("deletionTimestamp") else "")
            for p in self.pods(member, "sparkoperator.k8s.io/app-name=" + name)) or "none"

    def room_seen(self):
        return "the scheduler's free room on m1-n1 %sm, its Node's batch-cpu %dm" % (
            self.real_free(), self.node_batch_cpu())

    def quota_seen(self):
        q = self.node.cpu_quota_cores(fleet_node.BE_QOS)
        return "unlimited" if q is None else "%.2f cores" % q

    def eviction_kind(self):
        real = self.real
        if "evictedPod" not in real:
            return "none by the agent in the story"
        hold = real.get("reclaimHold")
        replaced = ("replaced in %.1f s, on %s after a %d s reclaim hold" % (
            real["replacementSeconds"], hold["replacementNode"], hold["holdSeconds"])
            if hold and "replacementSeconds" in real else "its replacement not shown")
        return ("gleaner-agent under memory pressure (Eviction API): %s at %s MiB of %d "
                "(%.1f%%, threshold %d%%), %.1f s after its work began to grow; %s" % (
                    real["evictedPod"], real["nodeMemoryAtEvictionMiB"], real["nodeMemoryMiB"],
                    real["nodeMemoryAtEvictionPercent"], real["memoryEvictThresholdPercent"],
                    real["pressureToEvictionSeconds"], replaced))

    def summary(self):
        jobs = [{k: j[k] for k in ("name", "member", "members", "state", "executorsReplaced",
                                   "reclaimed", "batchCpuMilli")} for j in self.jobs.values()]
        # What the agent did, from its own counter: the story evicts nothing itself.
        by_reason = (self.node.agent_evictions() if self.node and hasattr(self.node, "agent")
                     else None) or {}
        self.real["agentEvictionsByReason"] = by_reason
        return {"jobs": jobs, "evictions": sum(by_reason.values()),
                "evictionKind": self.eviction_kind(),
                "realNodes": ["m1/" + fleet_node.NODE],
                "reportDriven": ["%s/%s" % mn for mn in REPORT_DRIVEN],
                "realNode": self.real, "lsP99Ms": getattr(self, "ls_p99", None),
                "scratchBases": list(self.node.scratch.bases) if self.node else [],
                "ports": self.ports, "pids": [p.pid for p in self.all_procs],
                "events": self.events, "shown": self.shown,
                "stepsShown": self.steps_shown, "notShown": self.not_shown}

