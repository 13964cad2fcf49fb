"""The spark-operator 2.x SparkApplication controller (internal/controller/sparkapplication:
controller.go, event_filter.go, event_handler.go, submission.go) with spark-submit in
cluster mode standing behind its Submit."""

import copy
import time

from kubernetes.client.rest import ApiException

import kubeapi
import sparkpods
from kubeapi import Actor, log, now_rfc3339, status_of
from sparkapp_status import (
    NEW, SUBMITTED, RUNNING, COMPLETED, FAILED, SUBMISSION_FAILED, PENDING_RERUN,
    INVALIDATING, SUCCEEDING, FAILING, SUSPENDING, SUSPENDED, RESUMING, UNKNOWN, parse_time,
    state_of, ensure_status, reset_status, should_retry, time_until_retry,
    container_terminated, driver_state_of, executor_state_of)


SCRIPT = "spark-emulator.gleaner.io/"


class Conflict(Exception):
    pass


def fabric8_retry(fn, *args):
    """fabric8 6.x (Spark 3.5's client) retries a request answered 5xx or 429 up to 10
    times, waiting 100 ms * 2^min(attempt, 5) in between."""
    attempt = 0
    while True:
        try:
            return fn(*args)
        except ApiException as e:
            if (e.status >= 500 or e.status == 429 or e.status == 0) and attempt < 10:
                time.sleep(0.1 * (1 << min(attempt, 5)))
                attempt += 1
                continue
            raise


def fabric8_message(error, method, url):
    st = status_of(error)
    return ("Exception in thread \"main\" io.fabric8.kubernetes.client."
            "KubernetesClientException: Failure executing: %s at: %s. Message: %s. Received "
            "status: Status(apiVersion=v1, code=%s, details=%s, kind=Status, message=%s, "
            "metadata=ListMeta(_continue=null, remainingItemCount=null, resourceVersion=null, "
            "selfLink=null, additionalProperties={}), reason=%s, status=Failure, "
            "additionalProperties={})." % (method, url, st.get("message"), st.get("code"),
                                           st.get("details"), st.get("message"),
                                           st.get("reason")))


class Submission:
    """What one spark-submit run handed to the driver: its properties and templates."""

    def __init__(self, app, submission_id, conf, templates, app_id, rng):
        self.app = copy.deepcopy(app)
        self.ns = app["metadata"]["namespace"]
        self.submission_id = submission_id
        self.conf = conf
        self.templates = templates
        self.app_id = app_id
        self.rng = rng


class Operator(Actor):
    def __init__(self, api, cache, runtime, namespace=None, grace_period=10.0,
                 max_tracked_executors=1000):
        super().__init__("operator")
        self.api, self.cache, self.runtime = api, cache, runtime
        self.namespace = namespace
        self.grace_period = grace_period
        self.max_tracked = max_tracked_executors
        self.scheduled = {}  # key -> (when, timer)
        self.failures = {}  # key -> consecutive failed reconciles (rate limiter)
        cache.subscribe(self.on_cache_event)

    # --- watches (event_filter.go / event_handler.go) ----------------------------------
    def on_cache_event(self, kind, etype, obj, old):
        if kind in ("pods", "sparkapplications"):
            ns = obj.get("metadata", {}).get("namespace")
            if self.namespace is None or ns == self.namespace:
                self.post(self.on_event, kind, etype, obj, old)

    def on_event(self, kind, etype, obj, old):
        if kind == "sparkapplications":
            if etype == "MODIFIED" and old is not None and not self.app_update_passes(old, obj):
                return
            self.enqueue(kubeapi.key_of(obj))
            return
        labels = kubeapi.labels_of(obj)
        if labels.get(sparkpods.OP_LAUNCHED) != "true":
            return
        if etype == "MODIFIED" and old is not None and \
                (old.get("status") or {}).get("phase") == (obj.get("status") or {}).get("phase"):
            return
        name = labels.get(sparkpods.OP_APP_NAME)
        if not name:
            return
        key = (obj["metadata"]["namespace"], name)
        app = self.cache.get("sparkapplications", key)
        if sparkpods.OP_SUBMISSION in labels:
            if app is None or (app.get("status") or {}).get("submissionID") != \
                    labels[sparkpods.OP_SUBMISSION]:
                return
        if app is not None and state_of(app) == INVALIDATING:
            return
        self.enqueue(key)

    def app_update_passes(self, old, new):
        """EventFilter.Update: a spec change other than suspend or timeToLiveSeconds
        invalidates the running submission (status INVALIDATING) before reconciling."""
        if old["metadata"].get("resourceVersion") == new["metadata"].get("resourceVersion"):
            return False
        old_spec, new_spec = dict(old.get("spec") or {}), dict(new.get("spec") or {})
        if old_spec != new_spec:
            for field in ("suspend", "timeToLiveSeconds"):
                old_spec.pop(field, None)
                new_spec.pop(field, None)
            if old_spec == new_spec:
                return True
            app = copy.deepcopy(new)
            app.setdefault("status", {}).setdefault("applicationState", {})["state"] = \
                INVALIDATING
            try:
                self.api.replace_app_status(app["metadata"]["namespace"],
                                            app["metadata"]["name"], app)
            except ApiException as e:
                log("operator", "failed to update spec for %s: %s", kubeapi.key_of(app), e.status)
                return False
        return True

    # --- work queue ----------------------------------------------------------------------
    def enqueue(self, key, delay=0.0):
        when = time.monotonic() + delay
        current = self.scheduled.get(key)
        if current is not None and current[0] <= when:
            return
        if current is not None:
            current[1].cancel()
        self.scheduled[key] = (when, self.call_at(when, self.process, key))

    def process(self, key):
        self.scheduled.pop(key, None)
        try:
            requeue_after = self.reconcile(key)
        except Exception as e:  # noqa: BLE001 - a reconcile error: rate-limited requeue
            n = self.failures.get(key, 0)
            self.failures[key] = n + 1
            delay = min(0.005 * (2 ** n), 1000.0)
            log("operator", "reconcile %s/%s failed (retry in %.3fs): %r", key[0], key[1],
                delay, e)
            self.enqueue(key, delay)
            return
        self.failures.pop(key, None)
        if requeue_after:
            self.enqueue(key, requeue_after)

    def retry_on_conflict(self, fn):
        """client-go retry.RetryOnConflict with DefaultRetry (5 steps, 10 ms)."""
        for attempt in range(5):
            try:
                return fn()
            except Conflict:
                if attempt == 4:
                    raise
                time.sleep(0.01)

    # --- API helpers ---------------------------------------------------------------------
    def get_app(self, key):
        try:
            return self.api.get_app(key[0], key[1])
        except ApiException as e:
            if e.status == 404:
                return None
            raise

    def update_status(self, app):
        try:
            self.api.replace_app_status(app["metadata"]["namespace"], app["metadata"]["name"],
                                        app)
        except ApiException as e:
            if e.status == 409:
                raise Conflict()
            raise

    # --- Reconcile -----------------------------------------------------------------------
    def reconcile(self, key):
        app = self.get_app(key)
        if app is None:
            return None
        log("operator", "reconciling %s/%s state=%r", key[0], key[1], state_of(app))
        if app["metadata"].get("deletionTimestamp"):
            self.delete_spark_resources(app)
            return None
        spec = app.get("spec") or {}
        state = state_of(app)
        if spec.get("suspend") and state not in (COMPLETED, FAILED, SUSPENDED, SUSPENDING):
            return self.in_state(key, None, self.to_suspending)
        handlers = {
            NEW: self.on_new, SUBMITTED: self.on_submitted, SUBMISSION_FAILED:
            self.on_failed_submission, RUNNING: self.on_running, PENDING_RERUN:
            self.on_pending_rerun, INVALIDATING: self.on_invalidating, SUCCEEDING:
            self.on_succeeding, FAILING: self.on_failing, UNKNOWN: self.on_unknown,
            SUSPENDING: self.on_suspending, SUSPENDED: self.on_suspended, RESUMING:
            self.on_resuming}
        if state in (COMPLETED, FAILED):
            return self.on_terminated(key)
        if state in handlers:
            return self.in_state(key, state, handlers[state])
        return None

    def in_state(self, key, state, step):
        """The shape of every reconcileXxx: under RetryOnConflict, fetch the app, give up
        if it left the state, let the step change a copy, write the status."""
        result = {}

        def attempt():
            app = self.get_app(key)
            if app is None or (state is not None and state_of(app) != state):
                return
            app = copy.deepcopy(app)
            ensure_status(app)
            result["requeue"] = step(app)
            self.update_status(app)

        self.retry_on_conflict(attempt)
        return result.get("requeue")

    def to_suspending(self, app):
        app["status"]["applicationState"]["state"] = SUSPENDING

    def on_new(self, app):
        self.submit(app)

    def on_submitted(self, app):
        self.update_app_state(app)

    def on_running(self, app):
        self.update_app_state(app)

    def on_unknown(self, app):
        self.update_app_state(app)

    def on_failed_submission(self, app):
        status = app["status"]
        if should_retry(app):
            due = time_until_retry(app)
            if due <= 0:
                if self.resources_deleted(app):
                    self.submit(app)
                else:
                    self.delete_spark_resources(app)
                    raise RuntimeError("resources associated with SparkApplication name: %s "
                                       "namespace: %s, needed to be deleted"
                                       % (app["metadata"]["name"],
                                          app["metadata"]["namespace"]))
            else:
                return due
        else:
            status["applicationState"]["state"] = FAILED
            status["terminationTime"] = now_rfc3339()
        return None

    def on_pending_rerun(self, app):
        if self.resources_deleted(app):
            self.submit(app)

    def on_invalidating(self, app):
        try:
            self.delete_spark_resources(app)
        except ApiException as e:
            log("operator", "failed to delete resources: %s", e.status)
            return
        reset_status(app)
        app["status"]["applicationState"]["state"] = PENDING_RERUN

    def on_succeeding(self, app):
        if should_retry(app):
            self.delete_spark_resources(app)
            reset_status(app)
            app["status"]["applicationState"]["state"] = PENDING_RERUN
        else:
            app["status"]["applicationState"]["state"] = COMPLETED

    def on_failing(self, app):
        if should_retry(app):
            due = time_until_retry(app)
            if due <= 0:
                self.delete_spark_resources(app)
                reset_status(app)
                app["status"]["applicationState"]["state"] = PENDING_RERUN
            else:
                return due
        else:
            app["status"]["applicationState"]["state"] = FAILED
        return None

    def on_suspending(self, app):
        self.delete_spark_resources(app)
        app["status"]["applicationState"] = {"state": SUSPENDED}
        reset_status(app)

    def on_suspended(self, app):
        if self.resources_deleted(app):
            reset_status(app)
            if not (app.get("spec") or {}).get("suspend"):
                app["status"]["applicationState"] = {"state": RESUMING}

    def on_resuming(self, app):
        self.submit(app)

    def on_terminated(self, key):
        app = self.get_app(key)
        if app is None:
            return None
        app = copy.deepcopy(app)
        ensure_status(app)
        ttl = (app.get("spec") or {}).get("timeToLiveSeconds")
        terminated_at = parse_time(app["status"].get("terminationTime"))
        if ttl is not None and terminated_at is not None and time.time() - terminated_at > ttl:
            try:
                self.api.delete_app(key[0], key[1])
            except ApiException as e:
                if e.status != 404:
                    raise
            return None
        self.update_executor_state(app)
        try:
            self.update_status(app)
        except Conflict:
            raise RuntimeError("conflict writing the status of a terminated application")
        if ttl is None or terminated_at is None or ttl <= 0:
            return None
        return max(0.001, ttl - (time.time() - terminated_at))

    # --- submission ------------------------------------------------------------------------
    def submit(self, app):
        """submitSparkApplication: record the attempt, run spark-submit, set the state."""
        status = app["status"]
        rng = self.runtime.rng_for(app, status.get("submissionAttempts", 0))
        submission_id = rng.uuid()
        status["submissionID"] = submission_id
        status["driverInfo"]["podName"] = sparkpods.driver_pod_name(app)
        status["lastSubmissionAttemptTime"] = now_rfc3339()
        status["submissionAttempts"] = status.get("submissionAttempts", 0) + 1
        try:
            self.spark_submit(app, submission_id, rng)
        except sparkpods.SubmitError as e:
            status["applicationState"] = {"state": SUBMISSION_FAILED,
                                          "errorMessage": "failed to submit spark "
                                                          "application: %s" % e}
            log("operator", "submission of %s failed: %s", app["metadata"]["name"], e)
            return
        status["applicationState"] = {"state": SUBMITTED}
        status["executionAttempts"] = status.get("executionAttempts", 0) + 1

    def spark_submit(self, app, submission_id, rng):
        """SparkSubmitter.Submit: spark-submit creates the driver pod and exits; what it
        printed becomes the error (code=409 reads as 'driver pod already exist')."""
        try:
            conf = sparkpods.submission_conf(app, submission_id)
            templates = sparkpods.operator_templates(app)
        except (ValueError, TypeError) as e:
            raise sparkpods.SubmitError("failed to build spark-submit arguments: %s" % e)
        app_id = "spark-" + rng.uuid().replace("-", "")
        driver_prefix = sparkpods.resource_name_prefix(conf["spark.app.name"], rng)
        ns = app["metadata"]["namespace"]
        # DriverServiceFeatureStep: executors reach the driver through its headless Service.
        service = driver_prefix + "-driver-svc"
        if len(service) > 63:
            service = "spark-%s-driver-svc" % sparkpods.unique_id(rng)
        conf.setdefault("spark.driver.host", "%s.%s.svc" % (service, ns))
        try:
            pod = sparkpods.build_driver_pod(app, conf, templates["driver"], app_id,
                                             driver_prefix, rng)
            pod = sparkpods.mutate_spark_pod(pod, app)
        except (sparkpods.SubmitError, ValueError) as e:
            raise sparkpods.SubmitError("failed to run spark-submit: failed to run "
                                        "spark-submit: %s" % e)
        submission = Submission(app, submission_id, conf, templates, app_id, rng)
        self.runtime.register(submission, pod["metadata"]["name"])
        try:
            created = fabric8_retry(self.api.create_pod, ns, pod)
        except Exception as e:  # noqa: BLE001 - refused, or the server unreachable
            self.runtime.unregister(submission, pod["metadata"]["name"])
            if not isinstance(e, ApiException):
                raise sparkpods.SubmitError("failed to run spark-submit: failed to run "
                                            "spark-submit: %r" % e)
            if e.status == 409:
                raise sparkpods.SubmitError("failed to run spark-submit: driver pod already "
                                            "exist")
            url = "%s/api/v1/namespaces/%s/pods" % (self.api.client.configuration.host, ns)
            raise sparkpods.SubmitError("failed to run spark-submit: failed to run "
                                        "spark-submit: %s" % fabric8_message(e, "POST", url))
        log("operator", "submitted %s/%s: driver pod %s (uid %s)", ns, app["metadata"]["name"],
            created["metadata"]["name"], created["metadata"]["uid"])

    # --- driver and executor states --------------------------------------------------------
    def update_app_state(self, app):
        self.update_driver_state(app)
        self.update_executor_state(app)

    def update_driver_state(self, app):
        status = app["status"]
        state = status["applicationState"]
        pod_name = status["driverInfo"].get("podName")
        if not pod_name:
            raise RuntimeError("empty driver pod name with application state %s"
                               % state.get("state"))
        pod = self.cache.get("pods", (app["metadata"]["namespace"], pod_name))
        if pod is None:
            attempted = parse_time(status.get("lastSubmissionAttemptTime")) or 0
            if state.get("state") != SUBMITTED or time.time() - attempted > self.grace_period:
                state["state"] = FAILING
                state["errorMessage"] = "driver pod not found"
                status["terminationTime"] = now_rfc3339()
                return
            raise RuntimeError("driver pod not found, while inside the grace period")
        status["sparkApplicationId"] = kubeapi.labels_of(pod).get(sparkpods.APP_SELECTOR, "")
        driver_state = driver_state_of(pod)
        if driver_state in ("COMPLETED", "FAILED"):
            if not status.get("terminationTime"):
                status["terminationTime"] = now_rfc3339()
            if driver_state == "FAILED":
                terminated = container_terminated(pod, (sparkpods.DRIVER_CONTAINER,))
                if terminated is not None:
                    if terminated.get("exitCode", 0) != 0:
                        state["errorMessage"] = "driver container failed with ExitCode: %d, " \
                            "Reason: %s" % (terminated.get("exitCode", 0),
                                            terminated.get("reason", ""))
                else:
                    state["errorMessage"] = "driver container status missing"
        new_state = {"PENDING": SUBMITTED, "RUNNING": RUNNING, "COMPLETED": SUCCEEDING,
                     "FAILED": FAILING}.get(driver_state, UNKNOWN)
        if new_state != state.get("state"):
            state["state"] = new_state

    def update_executor_state(self, app):
        status = app["status"]
        ns, name = app["metadata"]["namespace"], app["metadata"]["name"]
        want = {sparkpods.OP_APP_NAME: name, sparkpods.ROLE: "executor"}
        if status.get("submissionID"):
            want[sparkpods.OP_SUBMISSION] = status["submissionID"]
        pods = self.cache.items("pods", lambda p: p["metadata"].get("namespace") == ns and all(
            kubeapi.labels_of(p).get(k) == v for k, v in want.items()))
        states, executor_app_id = {}, ""
        for pod in pods:
            try:
                executor_id = int(kubeapi.labels_of(pod).get(sparkpods.EXEC_ID, "0"))
            except ValueError:
                executor_id = 0
            if executor_id > self.max_tracked:
                continue
            states[pod["metadata"]["name"]] = executor_state_of(pod)
            if not executor_app_id:
                executor_app_id = kubeapi.labels_of(pod).get(sparkpods.APP_SELECTOR, "")
        if executor_app_id:
            status["sparkApplicationId"] = executor_app_id
        known = status.setdefault("executorState", {})
        known.update(states)
        for pod_name, old in list(known.items()):
            if old in ("COMPLETED", "FAILED") or pod_name in states:
                continue
            if status["applicationState"].get("state") != RUNNING:
                known[pod_name] = "COMPLETED" if \
                    status["applicationState"].get("state") == COMPLETED else "FAILED"
            else:
                known[pod_name] = "UNKNOWN"
        if not known:
            del status["executorState"]

    # --- resources ------------------------------------------------------------------------
    def driver_name(self, app):
        return (app.get("status") or {}).get("driverInfo", {}).get("podName") or \
            sparkpods.driver_pod_name(app)

    def delete_spark_resources(self, app):
        name = self.driver_name(app)
        try:
            self.api.delete_pod(app["metadata"]["namespace"], name)
        except ApiException as e:
            if e.status != 404:
                raise

    def resources_deleted(self, app):
        return self.cache.get("pods", (app["metadata"]["namespace"],
                                       self.driver_name(app))) is None
