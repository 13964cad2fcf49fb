"""The Spark 3.5 side of cluster mode that outlives single drivers: spark-submit's
submissions waiting for their driver pod, a driver actor (sparkdriver.py) started when that
pod runs and stopped when it ends, and executor pod events routed to their driver."""

import threading
import zlib

import kubeapi
import sparkpods
from sparkdriver import SparkDriver
from sparkoperator import SCRIPT, Submission


class SparkRuntime:
    """Starts a driver actor when a driver pod it submitted starts running, routes
    executor pod events to their driver, and stops drivers whose pod ended or went."""

    def __init__(self, api, cache, kubelet, namespace=None):
        self.api, self.cache, self.kubelet, self.namespace = api, cache, kubelet, namespace
        self.lock = threading.Lock()
        self.submissions = {}  # (ns, driver pod name, submission id) -> Submission
        self.drivers = {}  # driver pod uid -> SparkDriver
        self.by_app_id = {}  # spark-app-selector -> SparkDriver
        cache.subscribe(self.on_cache_event)
        kubelet.on_pre_stop = self.pre_stop

    def pre_stop(self, pod, command):
        """What an executor pod's preStop hook does to its JVM: Spark's decom.sh sends the
        executor SIGPWR and waits for it to exit. True when one of our drivers' executors
        runs there (it then decommissions and exits on its own)."""
        labels = kubeapi.labels_of(pod)
        if labels.get(sparkpods.ROLE) != "executor":
            return False
        with self.lock:
            driver = self.by_app_id.get(labels.get(sparkpods.APP_SELECTOR))
        try:
            executor_id = int(labels.get(sparkpods.EXEC_ID, ""))
        except ValueError:
            return False
        if driver is None:
            return False
        driver.post(driver.decommission, executor_id, pod)
        return True

    def rng_for(self, app, attempt):
        seed = (app["metadata"].get("annotations") or {}).get(SCRIPT + "seed")
        if seed is None:
            return sparkpods.Rng()
        key = "%s/%s/%s/%d" % (app["metadata"].get("namespace"), app["metadata"]["name"],
                               seed, attempt)
        return sparkpods.Rng(zlib.crc32(key.encode()))

    def register(self, submission, pod_name):
        with self.lock:
            self.submissions[(submission.ns, pod_name, submission.submission_id)] = submission

    def unregister(self, submission, pod_name):
        with self.lock:
            self.submissions.pop((submission.ns, pod_name, submission.submission_id), None)

    def on_cache_event(self, kind, etype, pod, old):
        if kind != "pods":
            return
        meta, labels = pod["metadata"], kubeapi.labels_of(pod)
        if self.namespace is not None and meta.get("namespace") != self.namespace:
            return
        role = labels.get(sparkpods.ROLE)
        if role == "executor":
            with self.lock:
                driver = self.by_app_id.get(labels.get(sparkpods.APP_SELECTOR))
            if driver is not None:
                driver.post(driver.on_executor_event, etype, pod)
            return
        if role != "driver":
            return
        uid = meta.get("uid")
        with self.lock:
            driver = self.drivers.get(uid)
        if driver is not None:
            if etype == "DELETED" or (pod.get("status") or {}).get("phase") in \
                    ("Succeeded", "Failed"):
                driver.post(driver.jvm_gone)
            return
        status = pod.get("status") or {}
        if etype == "DELETED":  # it never ran: nothing will start from that submission
            with self.lock:
                self.submissions.pop((meta.get("namespace"), meta.get("name"),
                                      labels.get(sparkpods.OP_SUBMISSION)), None)
            return
        if status.get("phase") != "Running" or meta.get("deletionTimestamp"):
            return
        if any((c.get("state") or {}).get("terminated")
               for c in status.get("containerStatuses") or []):
            return
        submission = self.find_submission(pod)
        if submission is None:
            return
        driver = SparkDriver(self, submission, pod)
        with self.lock:
            self.drivers[uid] = driver
            self.by_app_id[submission.app_id] = driver
        driver.start()
        driver.post(driver.begin)

    def find_submission(self, pod):
        meta, labels = pod["metadata"], kubeapi.labels_of(pod)
        key = (meta["namespace"], meta["name"], labels.get(sparkpods.OP_SUBMISSION))
        with self.lock:
            submission = self.submissions.pop(key, None)
        if submission is not None:
            return submission
        # A driver submitted before this emulator started: rebuild what spark-submit
        # handed it from the SparkApplication, if that still names this submission.
        app = self.cache.get("sparkapplications", (meta["namespace"],
                                                   labels.get(sparkpods.OP_APP_NAME)))
        if app is None or (app.get("status") or {}).get("submissionID") != key[2]:
            return None
        conf = sparkpods.submission_conf(app, key[2])
        return Submission(app, key[2], conf, sparkpods.operator_templates(app),
                          labels.get(sparkpods.APP_SELECTOR), sparkpods.Rng())

    def forget(self, driver):
        with self.lock:
            self.drivers.pop(driver.driver_uid, None)
            if self.by_app_id.get(driver.app_id) is driver:
                del self.by_app_id[driver.app_id]
