"""Spark 3.5 drivers in cluster mode: one actor per running driver pod, doing what
KubernetesClusterSchedulerBackend, ExecutorPodsAllocator, ExecutorPodsLifecycleManager and
ExecutorAllocationManager do to executor pods, with the job itself replaced by the
test-only script in the SparkApplication's spark-emulator.gleaner.io/ annotations."""

import copy
import time

from kubernetes.client.rest import ApiException

import kubeapi
import sparkpods
from kubeapi import Actor, log
from sparkoperator import SCRIPT, fabric8_retry
from sparkpods import conf_bool, conf_int, time_as_seconds
from sparkdecommission import Decommissioning

EXIT_MAX_EXECUTOR_FAILURES = 11  # SparkExitCode.EXIT_MAX_EXECUTOR_FAILURES
INT_MAX = 2 ** 31 - 1


class Script:
    """The spark-emulator.gleaner.io/ annotations (see spark_emulator.py)."""

    def __init__(self, annotations):
        get = lambda k: (annotations or {}).get(SCRIPT + k)  # noqa: E731
        self.run_seconds = float(get("run-seconds")) if get("run-seconds") else None
        self.run_from = get("run-from") or "first-executor"
        if self.run_from not in ("first-executor", "all-executors", "driver"):
            raise ValueError("run-from must be first-executor, all-executors or driver")
        self.driver_exit_code = int(get("driver-exit-code") or 0)
        self.failures = {}  # executor id -> (seconds after it runs, exit code)
        for item in filter(None, (get("fail-executors") or "").replace(" ", "").split(",")):
            who, _, rest = item.partition("@")
            after, _, code = rest.partition(":")
            self.failures[int(who)] = (float(after or 0), int(code or 1))
        self.demand = []  # [(seconds after the driver started, executors needed)]
        for item in filter(None, (get("demand") or "").replace(" ", "").split(",")):
            at, _, n = item.partition(":")
            self.demand.append((float(at), int(n)))
        self.demand.sort()
        # How long a decommissioning executor takes to migrate its blocks once its running
        # task is done (with spark.storage.decommission.enabled).
        self.migrate_seconds = float(get("migrate-seconds") or 0.2)
        # What each task does on a real node (podruntime.py): its wall time and memory.
        self.task_seconds = float(get("task-seconds") or 0.5)
        self.task_memory = int(get("task-memory") or 0)

    def demand_at(self, t):
        current = None
        for at, n in self.demand:
            if at <= t:
                current = n
        return current


class SparkDriver(Decommissioning, Actor):
    def __init__(self, runtime, submission, driver_pod):
        name = driver_pod["metadata"]["name"]
        super().__init__("driver-" + name)
        self.runtime, self.api, self.kubelet = runtime, runtime.api, runtime.kubelet
        self.ns = submission.ns
        self.driver_pod = driver_pod
        self.driver_uid = driver_pod["metadata"]["uid"]
        self.app_id = submission.app_id
        self.app_spec = sparkpods.defaulted_spec(submission.app)
        self.template = submission.templates["executor"]
        self.app_for_webhook = submission.app
        self.rng = submission.rng
        conf = dict(submission.conf)
        conf["spark.app.id"] = self.app_id
        # KubernetesClusterManager: one prefix for all executors, from spark.app.name.
        if not conf.get("spark.kubernetes.executor.podNamePrefix"):
            conf["spark.kubernetes.executor.podNamePrefix"] = sparkpods.resource_name_prefix(
                conf.get("spark.app.name", "spark"), self.rng)
        self.conf = conf
        self.prefix = conf["spark.kubernetes.executor.podNamePrefix"]
        app = runtime.cache.get("sparkapplications", (self.ns, submission.app["metadata"][
            "name"])) or submission.app
        try:
            self.script = Script(app["metadata"].get("annotations"))
        except ValueError as e:
            log(self.name, "bad script annotations, ignored: %s", e)
            self.script = Script({})

        # Configuration (deploy/k8s/Config.scala and core config defaults of 3.5).
        self.batch_size = conf_int(conf, "spark.kubernetes.allocation.batch.size", 5)
        self.batch_delay = time_as_seconds(conf.get("spark.kubernetes.allocation.batch.delay",
                                                    "1s"))
        self.max_pending = conf_int(conf, "spark.kubernetes.allocation.maxPendingPods", INT_MAX)
        self.creation_timeout = max(self.batch_delay * 5, time_as_seconds(
            conf.get("spark.kubernetes.allocation.executor.timeout", "600s")))
        self.event_interval = time_as_seconds(conf.get(
            "spark.kubernetes.executor.eventProcessingInterval", "1s"))
        self.delete_executors = conf_bool(conf, "spark.kubernetes.executor.deleteOnTermination",
                                          True)
        self.kill_grace = time_as_seconds(conf.get(
            "spark.kubernetes.dynamicAllocation.deleteGracePeriod", "5s"))
        self.dynamic = conf_bool(conf, "spark.dynamicAllocation.enabled", False)
        self.min_executors = conf_int(conf, "spark.dynamicAllocation.minExecutors", 0)
        self.max_executors = conf_int(conf, "spark.dynamicAllocation.maxExecutors", INT_MAX)
        initial = conf_int(conf, "spark.dynamicAllocation.initialExecutors", self.min_executors)
        self.idle_timeout = time_as_seconds(conf.get(
            "spark.dynamicAllocation.executorIdleTimeout", "60s"), "s")
        self.backlog_timeout = time_as_seconds(conf.get(
            "spark.dynamicAllocation.schedulerBacklogTimeout", "1s"), "s")
        self.sustained_timeout = time_as_seconds(conf.get(
            "spark.dynamicAllocation.sustainedSchedulerBacklogTimeout",
            conf.get("spark.dynamicAllocation.schedulerBacklogTimeout", "1s")), "s")
        instances = conf.get("spark.executor.instances")
        if self.dynamic:
            # Utils.getDynamicAllocationInitialExecutors
            self.target = max(self.min_executors, initial, int(instances or 0))
            effective = self.max_executors
        else:
            # SchedulerBackendUtils.getInitialTargetExecutorNumber (default 2)
            self.target = int(instances) if instances is not None else 2
            effective = int(instances or 0)
        # ExecutorFailureTracker.maxNumExecutorFailures
        self.max_failures = conf_int(conf, "spark.executor.maxNumFailures", max(
            3, INT_MAX if effective > INT_MAX // 2 else 2 * effective))

        self.counter = 0
        self.pods = {}  # executor id -> latest pod (the snapshot)
        self.seen_ids = set()  # every executor id a snapshot has shown
        self.outstanding = 0
        self.newly_created = {}  # id -> monotonic time of the create
        self.created_at = {}  # id -> monotonic time of the create
        self.deleted_ids = set()  # excess pending pods we deleted
        self.failed_ids = set()  # ExecutorFailureTracker
        self.removed = set()  # executors removed from Spark (lifecycle manager)
        self.killed = set()  # executors dynamic allocation asked to exit
        self.running_since = {}  # id -> when it was first seen running (registered)
        self.idle_since = {}
        self.failure_timers = {}
        self.decommissioned = set()  # executors that exited after SIGPWR (decommissioning)
        self.decommissioning = set()  # executors that got SIGPWR and take no new tasks
        self.task_seconds_lost = 0.0  # task work lost with executors that went mid-task
        self.last_task_tick = None
        self.migrate_blocks = conf_bool(conf, "spark.storage.decommission.enabled", False)
        self.started = None
        self.run_started = None
        self.finishing = False
        self.initializing = True
        self.to_add = 1
        self.add_time = None

    # --- lifecycle ------------------------------------------------------------------------
    def begin(self):
        self.started = time.monotonic()
        log(self.name, "started: app id %s, executor prefix %s, target %d", self.app_id,
            self.prefix, self.target)
        existing = [int(kubeapi.labels_of(p).get(sparkpods.EXEC_ID, "0")) for p in
                    self.runtime.cache.items("pods", self.is_mine)]
        self.counter = max(existing, default=0)
        for p in self.runtime.cache.items("pods", self.is_mine):
            self.on_executor_event("ADDED", p)
        if self.script.run_from == "driver":
            self.start_run_clock()
        self.allocator_tick()
        self.lifecycle_tick()
        if self.dynamic:
            self.allocation_manager_tick()

    def is_mine(self, pod):
        labels = kubeapi.labels_of(pod)
        return pod["metadata"].get("namespace") == self.ns and \
            labels.get(sparkpods.APP_SELECTOR) == self.app_id and \
            labels.get(sparkpods.ROLE) == "executor"

    def jvm_gone(self):
        """The driver pod ended or was deleted: the JVM is gone with it."""
        log(self.name, "driver pod gone; stopping")
        self.runtime.forget(self)
        self.stop()

    # --- the snapshot of executor pods ----------------------------------------------------
    def on_executor_event(self, etype, pod):
        try:
            executor_id = int(kubeapi.labels_of(pod).get(sparkpods.EXEC_ID, ""))
        except ValueError:
            return
        self.seen_ids.add(executor_id)
        phase = (pod.get("status") or {}).get("phase")
        if phase == "Succeeded" and not self.finishing:
            # An executor exits 0 before the application ends only once it decommissioned
            # (on a real node its process does it; on an emulated one, decommission()).
            self.decommissioned.add(executor_id)
        if etype == "DELETED" or phase == "Failed":
            self.count_lost_work(executor_id)
        if etype == "DELETED":
            self.pods[executor_id] = None
            self.running_since.pop(executor_id, None)
            self.idle_since.pop(executor_id, None)
            return
        self.pods[executor_id] = pod
        if phase == "Running" and not pod["metadata"].get("deletionTimestamp") and \
                executor_id not in self.running_since and executor_id not in self.removed:
            self.executor_registered(executor_id)
        if phase in ("Failed", "Succeeded"):
            self.running_since.pop(executor_id, None)
            self.idle_since.pop(executor_id, None)

    def executor_registered(self, executor_id):
        now = time.monotonic()
        self.running_since[executor_id] = now
        self.idle_since[executor_id] = now
        if executor_id in self.script.failures:
            after, code = self.script.failures[executor_id]
            self.failure_timers[executor_id] = self.call_later(
                after, self.fail_executor, executor_id, code)
        if self.run_started is None:
            if self.script.run_from == "first-executor" or (
                    self.script.run_from == "all-executors" and
                    len(self.running_ids()) >= max(1, self.target)):
                self.start_run_clock()

    def fail_executor(self, executor_id, code):
        pod = self.pods.get(executor_id)
        if pod is None or (pod.get("status") or {}).get("phase") != "Running" or self.finishing:
            return
        reason = "OOMKilled" if code == 137 else "Error"
        log(self.name, "executor %d exits with code %d (scripted)", executor_id, code)
        self.kubelet.post(self.kubelet.container_exited, pod, code, reason)

    def state_of(self, executor_id):
        pod = self.pods.get(executor_id)
        if pod is None:
            return "deleted"
        if pod["metadata"].get("deletionTimestamp"):
            return "terminating"
        return {"Pending": "pending", "Running": "running", "Succeeded": "succeeded",
                "Failed": "failed"}.get((pod.get("status") or {}).get("phase"), "unknown")

    def running_ids(self):
        return sorted(i for i in self.pods if self.state_of(i) == "running" and
                      i not in self.deleted_ids)

    # --- ExecutorPodsAllocator.onNewSnapshots ----------------------------------------------
    def allocator_tick(self):
        if self.finishing:
            return
        self.call_later(self.batch_delay, self.allocator_tick)
        self.on_new_snapshots()

    def on_new_snapshots(self):
        now = time.monotonic()
        for i in list(self.newly_created):
            if i in self.seen_ids:
                del self.newly_created[i]
        timed_out = [i for i, t in self.newly_created.items() if now - t > self.creation_timeout]
        if timed_out:
            log(self.name, "executors %s not seen %.0fs after their creation", timed_out,
                self.creation_timeout)
            for i in timed_out:
                del self.newly_created[i]
            if self.delete_executors:
                self.delete_by_ids(timed_out)
        for i in self.pods:
            if self.state_of(i) == "failed" and i not in self.failed_ids:
                self.failed_ids.add(i)
        if len(self.failed_ids) > self.max_failures:
            log(self.name, "Max number of executor failures (%d) reached", self.max_failures)
            self.finish(EXIT_MAX_EXECUTOR_FAILURES)
            return
        self.deleted_ids &= set(i for i in self.pods if self.pods[i] is not None)
        running = len(self.running_ids())
        pending = [i for i in sorted(self.pods) if self.state_of(i) == "pending" and
                   i not in self.deleted_ids]
        newly = dict(self.newly_created)
        not_running = len(pending) + len(newly)
        count = running + not_running
        if count > self.target:
            excess = count - self.target
            newly_to_delete = [i for i, t in newly.items() if now - t > self.idle_timeout][:excess]
            pending_to_delete = [i for i in pending if now - self.created_at.get(i, 0) >
                                 self.idle_timeout][:excess - len(newly_to_delete)]
            to_delete = newly_to_delete + pending_to_delete
            if to_delete:
                log(self.name, "Deleting %d excess pod requests (%s)", len(to_delete),
                    ",".join(map(str, sorted(to_delete))))
                self.deleted_ids |= set(to_delete)
                self.delete_by_ids(to_delete, pending_only=True)
                for i in newly_to_delete:
                    self.newly_created.pop(i, None)
                pending = [i for i in pending if i not in to_delete]
                not_running -= len(to_delete)
        if not newly and count < self.target:
            slots = self.max_pending - not_running
            if slots > 0:
                self.request_executors(min(self.target - count, self.batch_size, slots))
        # numOutstandingPods: pending pods and created pods not seen yet.
        self.outstanding = len(pending) + len(self.newly_created)

    def request_executors(self, n):
        log(self.name, "Going to request %d executors from Kubernetes, target %d", n, self.target)
        for _ in range(n):
            self.counter += 1
            executor_id = self.counter
            pod = sparkpods.build_executor_pod(self.app_spec, self.conf, self.template,
                                               self.app_id, self.prefix, executor_id,
                                               self.driver_pod, self.rng)
            # The operator's webhook reads the SparkApplication as it is now.
            app = self.runtime.cache.get("sparkapplications", kubeapi.key_of(
                self.app_for_webhook)) or self.app_for_webhook
            pod = sparkpods.mutate_spark_pod(pod, app)
            try:
                fabric8_retry(self.api.create_pod, self.ns, pod)
            except Exception as e:  # noqa: BLE001 - refused, or the server unreachable
                # The exception leaves onNewSnapshots: the rest of the batch waits for the
                # next round, and this id is spent.
                detail = kubeapi.status_of(e).get("message") if isinstance(e, ApiException) \
                    else repr(e)
                log(self.name, "creating executor %d failed: %s", executor_id, detail)
                return
            now = time.monotonic()
            self.newly_created[executor_id] = now
            self.created_at[executor_id] = now

    def delete_by_ids(self, ids, pending_only=False):
        """A delete by labels spark-app-selector, spark-role=executor, spark-exec-id in
        (ids) (and status.phase=Pending), done pod by pod: the test API server has no
        deletecollection."""
        selector = "%s=%s,%s=executor,%s in (%s)" % (
            sparkpods.APP_SELECTOR, self.app_id, sparkpods.ROLE, sparkpods.EXEC_ID,
            ",".join(str(i) for i in sorted(ids)))
        self.delete_matching(selector, "status.phase=Pending" if pending_only else None)

    def delete_matching(self, selector, field_selector=None):
        try:
            listed = self.api.list_pods(self.ns, selector, field_selector)
        except ApiException as e:
            log(self.name, "listing executors failed: %s", e.status)
            return
        for pod in listed.get("items") or []:
            try:
                self.api.delete_pod(self.ns, pod["metadata"]["name"])
            except ApiException as e:
                if e.status != 404:
                    log(self.name, "deleting %s failed: %s", pod["metadata"]["name"], e.status)

    # --- ExecutorPodsLifecycleManager.onNewSnapshots ---------------------------------------
    def lifecycle_tick(self):
        if self.finishing:
            return
        self.call_later(self.event_interval, self.lifecycle_tick)
        for i in sorted(self.pods):
            state = self.state_of(i)
            if state in ("failed", "succeeded"):
                if i not in self.removed:
                    self.removed.add(i)
                    log(self.name, "executor %d %s; removing it", i, state)
                    if self.delete_executors:
                        pod = self.pods[i]
                        try:
                            self.api.delete_pod(self.ns, pod["metadata"]["name"])
                        except ApiException as e:
                            if e.status != 404:
                                log(self.name, "deleting %s failed: %s",
                                    pod["metadata"]["name"], e.status)
            elif state == "deleted":
                self.removed.add(i)
                del self.pods[i]

    # --- ExecutorAllocationManager.schedule ------------------------------------------------
    def allocation_manager_tick(self):
        if self.finishing:
            return
        self.call_later(0.1, self.allocation_manager_tick)
        now = time.monotonic()
        demand = self.script.demand_at(now - self.started)
        if demand is None:
            return  # no stage yet: initializing, the target stays the initial one
        self.initializing = False
        registered = [i for i in self.running_ids() if i not in self.killed]
        max_needed = demand
        old_target = self.target
        if max_needed < self.target:
            self.target = max(max_needed, self.min_executors)
            self.to_add = 1
        elif self.add_time is not None and now >= self.add_time:
            self.add_executors(max_needed, len(registered))
            self.add_time = now + self.sustained_timeout
        # Scheduler backlog: tasks waiting for executors (ExecutorAllocationListener).
        if demand > len(registered):
            if self.add_time is None:
                self.add_time = now + self.backlog_timeout
        else:
            self.add_time = None
            self.to_add = 1
        if self.target != old_target:
            log(self.name, "executor target %d -> %d (demand %d)", old_target, self.target,
                demand)
            if self.target > old_target:
                self.call_later(0, self.allocator_tick_now)
        # Executors without tasks: the lowest ids run the tasks, the rest are idle.
        busy = set(registered[:max(0, demand)])
        for i in registered:
            if i in busy:
                self.idle_since.pop(i, None)
            else:
                self.idle_since.setdefault(i, now)
        timed_out = [i for i in sorted(registered, reverse=True)
                     if i in self.idle_since and now - self.idle_since[i] >= self.idle_timeout]
        total = len(registered)
        to_remove = []
        for i in timed_out:
            if total - 1 < self.min_executors or total - 1 < self.target:
                continue
            to_remove.append(i)
            total -= 1
        if to_remove:
            self.kill_executors(to_remove)

    def allocator_tick_now(self):
        """setTotalExpectedExecutors notifies the snapshot subscribers at once when no pod
        is outstanding."""
        if not self.finishing and self.outstanding == 0:
            self.on_new_snapshots()

    def add_executors(self, max_needed, registered):
        old = self.target
        if old >= self.max_executors:
            self.to_add = 1
            return 0
        target = max(self.target, registered) + self.to_add
        target = min(target, max_needed)
        target = max(min(target, self.max_executors), self.min_executors)
        delta = target - old
        self.target = target
        if delta == 0:
            self.to_add = 1
        elif delta > 0:
            self.to_add = self.to_add * 2 if delta == self.to_add else 1
        return delta

    def kill_executors(self, ids):
        """KubernetesClusterSchedulerBackend.doKillExecutors: the executors are told to
        exit (their pods end Succeeded and the lifecycle manager deletes them); those still
        running after spark.kubernetes.dynamicAllocation.deleteGracePeriod are deleted."""
        log(self.name, "removing idle executors %s", ids)
        for i in ids:
            self.killed.add(i)
            self.idle_since.pop(i, None)
            pod = self.pods.get(i)
            if pod is not None:
                self.kubelet.post(self.kubelet.container_exited, pod, 0, "Completed")
        self.call_later(self.kill_grace, self.force_kill, list(ids))

    def force_kill(self, ids):
        still = [i for i in ids if self.state_of(i) == "running"]
        if still:
            selector = "%s=%s,%s=executor,%s in (%s)" % (
                sparkpods.APP_SELECTOR, self.app_id, sparkpods.ROLE, sparkpods.EXEC_ID,
                ",".join(map(str, still)))
            self.delete_matching(selector, "status.phase=Running")

    # --- the job ----------------------------------------------------------------------------
    def start_run_clock(self):
        if self.run_started is not None:
            return
        self.run_started = time.monotonic()
        self.task_tick()
        if self.script.run_seconds is not None:
            log(self.name, "job runs for %.3fs", self.script.run_seconds)
            self.call_later(self.script.run_seconds, self.finish, self.script.driver_exit_code)

    def task_tick(self):
        """While the job runs, each executor with work (every registered one; with dynamic
        allocation those the demand keeps busy) is handed one task per task length."""
        if self.finishing:
            return
        self.call_later(self.script.task_seconds, self.task_tick)
        self.last_task_tick = time.monotonic()
        for i in self.running_ids():
            if i not in self.killed and i not in self.decommissioning and (
                    not self.dynamic or i not in self.idle_since):
                self.kubelet.post(self.kubelet.run_task, self.pods[i], self.script.task_seconds,
                                  self.script.task_memory)

    def finish(self, exit_code):
        """SparkContext.stop: KubernetesClusterSchedulerBackend.stop deletes the executors
        (ExecutorPodsAllocator.stop), then the driver JVM exits."""
        if self.finishing:
            return
        self.finishing = True
        log(self.name, "application ends; exit code %d", exit_code)
        if self.delete_executors:
            self.delete_matching("%s=%s,%s=executor" % (sparkpods.APP_SELECTOR, self.app_id,
                                                        sparkpods.ROLE))
        driver = self.runtime.cache.get("pods", (self.ns, self.driver_pod["metadata"]["name"]))
        if driver is not None and driver["metadata"].get("uid") == self.driver_uid:
            self.kubelet.post(self.kubelet.container_exited, copy.deepcopy(driver), exit_code,
                              "Completed" if exit_code == 0 else "Error")
        self.runtime.forget(self)
        self.stop()
