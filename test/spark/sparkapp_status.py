"""A SparkApplication's status as the spark-operator 2.x reads and writes it
(pkg/util/sparkapplication.go): the application states, the status resets between
attempts, the retry rules of the restart policy, and the driver's and executors' states from
their pods."""

import calendar
import time

import sparkpods

NEW, SUBMITTED, RUNNING, COMPLETED, FAILED = "", "SUBMITTED", "RUNNING", "COMPLETED", "FAILED"
SUBMISSION_FAILED, PENDING_RERUN, INVALIDATING = "SUBMISSION_FAILED", "PENDING_RERUN", \
    "INVALIDATING"
SUCCEEDING, FAILING, SUSPENDING, SUSPENDED, RESUMING, UNKNOWN = \
    "SUCCEEDING", "FAILING", "SUSPENDING", "SUSPENDED", "RESUMING", "UNKNOWN"


def parse_time(text):
    if not text:
        return None
    try:
        return calendar.timegm(time.strptime(text, "%Y-%m-%dT%H:%M:%SZ"))
    except ValueError:
        return None


# --- status helpers (pkg/util/sparkapplication.go) ---------------------------------------
def state_of(app):
    return ((app.get("status") or {}).get("applicationState") or {}).get("state", "")


def ensure_status(app):
    status = app.setdefault("status", {})
    status.setdefault("applicationState", {}).setdefault("state", "")
    status.setdefault("driverInfo", {})
    return status


def reset_status(app):
    """resetSparkApplicationStatus."""
    status = app["status"]
    state = status["applicationState"].get("state")
    if state in (SUCCEEDING, FAILING):
        for k in ("sparkApplicationId", "terminationTime", "executorState"):
            status.pop(k, None)
        status["applicationState"].pop("errorMessage", None)
        status["driverInfo"] = {}
    elif state == INVALIDATING:
        for k in ("sparkApplicationId", "submissionAttempts", "executionAttempts",
                  "lastSubmissionAttemptTime", "terminationTime", "executorState"):
            status.pop(k, None)
        status["applicationState"].pop("errorMessage", None)
        status["driverInfo"] = {}
    elif state == SUSPENDED:
        status.pop("sparkApplicationId", None)
        status.pop("executorState", None)
        status["applicationState"].pop("errorMessage", None)
        status["driverInfo"] = {}


def should_retry(app):
    """util.ShouldRetry."""
    restart = sparkpods.defaulted_spec(app).get("restartPolicy") or {}
    kind, status = restart.get("type"), app["status"]
    state = status["applicationState"].get("state")
    if state == SUCCEEDING:
        return kind == "Always"
    # A failure is retried always, or on failure while the attempts are within the limit.
    limits = {FAILING: ("onFailureRetries", "executionAttempts"),
              SUBMISSION_FAILED: ("onSubmissionFailureRetries", "submissionAttempts")}
    if state not in limits:
        return False
    if kind == "Always":
        return True
    retries_field, attempts_field = limits[state]
    retries = restart.get(retries_field)
    return kind == "OnFailure" and retries is not None and \
        status.get(attempts_field, 0) <= retries


def time_until_retry(app):
    """util.TimeUntilNextRetryDue: a linear backoff of attempts * interval."""
    restart = sparkpods.defaulted_spec(app).get("restartPolicy") or {}
    status = app["status"]
    state = status["applicationState"].get("state")
    interval = restart.get("onSubmissionFailureRetryInterval") if state == SUBMISSION_FAILED \
        else restart.get("onFailureRetryInterval")
    attempts = status.get("submissionAttempts", 0)
    last = parse_time(status.get("lastSubmissionAttemptTime"))
    if interval is None or last is None or attempts <= 0:
        raise RuntimeError("invalid retry interval (%s), last attempt time (%s) or "
                           "attemptsDone (%s)" % (interval, last, attempts))
    return interval * attempts - (time.time() - last)


def container_terminated(pod, names):
    for c in (pod.get("status") or {}).get("containerStatuses") or []:
        if c.get("name") in names:
            return (c.get("state") or {}).get("terminated")
    return None


def driver_state_of(pod):
    """util.GetDriverState."""
    phase = (pod.get("status") or {}).get("phase")
    if phase == "Pending":
        return "PENDING"
    if phase == "Running":
        terminated = container_terminated(pod, (sparkpods.DRIVER_CONTAINER,))
        if terminated is not None:
            return "COMPLETED" if terminated.get("exitCode", 0) == 0 else "FAILED"
        return "RUNNING"
    if phase == "Succeeded":
        return "COMPLETED"
    if phase == "Failed":
        terminated = container_terminated(pod, (sparkpods.DRIVER_CONTAINER,))
        return "COMPLETED" if terminated is not None and terminated.get("exitCode", 0) == 0 \
            else "FAILED"
    return "UNKNOWN"


def executor_state_of(pod):
    return {"Pending": "PENDING", "Running": "RUNNING", "Succeeded": "COMPLETED",
            "Failed": "FAILED"}.get((pod.get("status") or {}).get("phase"), "UNKNOWN")
