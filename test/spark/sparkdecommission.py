"""A Spark 3.5 driver's side of executor decommissioning and of work lost with executors,
mixed into SparkDriver (sparkdriver.py), whose state it reads: decommission() is what SIGPWR
does to an emulated executor (CoarseGrainedExecutorBackend.decommissionSelf)."""

import time

from kubeapi import log


class Decommissioning:
    def decommission(self, executor_id, pod):
        """SIGPWR reached executor `executor_id` (its pod's preStop hook, decom.sh): it tells
        the driver, takes no new task, and exits 0 ("Finished decommissioning") once its
        running task is done and, with spark.storage.decommission.enabled, its blocks have
        migrated; the driver then counts no failure and loses no task."""
        if executor_id in self.decommissioning or executor_id not in self.running_since:
            return
        self.decommissioning.add(executor_id)
        now = time.monotonic()
        busy = self.run_started is not None and self.last_task_tick is not None and \
            executor_id not in self.killed
        left = max(0.0, self.last_task_tick + self.script.task_seconds - now) if busy else 0.0
        migrate = self.script.migrate_seconds if self.migrate_blocks else 0.0
        log(self.name, "executor %d decommissioning: exits in %.2fs (task %.2fs, blocks %.2fs)",
            executor_id, left + migrate, left, migrate)
        self.call_later(left + migrate, self.decommissioned_exit, executor_id, pod)

    def decommissioned_exit(self, executor_id, pod):
        current = self.pods.get(executor_id)
        if current is None or (current.get("status") or {}).get("phase") != "Running":
            return  # killed first (the grace period ran out) or gone
        # Its pod's Succeeded marks it decommissioned (on_executor_event), as a real node's.
        log(self.name, "executor %d: Finished decommissioning", executor_id)
        self.kubelet.post(self.kubelet.container_exited, pod, 0, "Completed")

    def count_lost_work(self, executor_id):
        """An executor gone while its task ran, not decommissioned: that task's work so far
        is lost (Spark runs it again elsewhere)."""
        idle = executor_id in self.killed or (self.dynamic and executor_id in self.idle_since)
        if executor_id in self.decommissioned or executor_id not in self.running_since or idle \
                or self.run_started is None or self.last_task_tick is None or self.finishing:
            return
        lost = min(self.script.task_seconds, time.monotonic() - self.last_task_tick)
        self.task_seconds_lost += lost
        log(self.name, "executor %d lost mid-task: %.2fs of task work lost (%.2fs in all)",
            executor_id, lost, self.task_seconds_lost)
