"""How a SparkApplication becomes pods: the operator's pod templates (the properties it
passes to spark-submit are in spark_conf), Spark 3.5's reading of them
(deploy/k8s KubernetesConf, BasicDriverFeatureStep, BasicExecutorFeatureStep, pod
templates through KubernetesUtils.selectSparkContainer) and the operator's pod mutating
webhook (internal/webhook/sparkpod_defaulter.go), which changes every pod the operator
launches on creation."""

import copy
import hashlib
import random
import re
import time
import uuid

from spark_conf import (DRIVER_CONTAINER, EXECUTOR_CONTAINER, OP_APP_NAME, OP_LAUNCHED,
                        OP_SUBMISSION, bytes_as_mib, conf_bool, conf_int, custom_resources,
                        defaulted_spec, driver_pod_name, java_memory_to_k8s, memory_settings,
                        prefixed, submission_conf, time_as_seconds)

# The emulator's other modules reach the spark-submit properties through this one too.
__all__ = ["OP_APP_NAME", "OP_LAUNCHED", "OP_SUBMISSION", "driver_pod_name", "submission_conf",
           "time_as_seconds"]

# Labels (spark-operator pkg/common/spark.go, Spark deploy/k8s/Constants.scala).
APP_SELECTOR = "spark-app-selector"
APP_NAME_LABEL = "spark-app-name"
ROLE = "spark-role"
EXEC_ID = "spark-exec-id"
RESOURCE_PROFILE_ID = "spark-exec-resourceprofile-id"
SPARK_VERSION_LABEL = "spark-version"

DEFAULT_SPARK_VERSION = "3.5.5"
# spark.kubernetes.decommission.script's default (deploy/k8s/Config.scala, DECOMMISSION_SCRIPT)
DECOMMISSION_SCRIPT = "/opt/decom.sh"


class SubmitError(Exception):
    """spark-submit exited non-zero; the text is what it printed."""


def apply_selector_and_pull_secrets(pspec, conf, role):
    """spark.kubernetes.node.selector.* then the role's own, and the image pull secrets."""
    selector = prefixed(conf, "spark.kubernetes.node.selector.")
    selector.update(prefixed(conf, "spark.kubernetes.%s.node.selector." % role))
    if selector:
        pspec.setdefault("nodeSelector", {}).update(selector)
    secrets = [s.strip() for s in conf.get("spark.kubernetes.container.image.pullSecrets",
                                            "").split(",") if s.strip()]
    if secrets:
        pspec.setdefault("imagePullSecrets", []).extend({"name": s} for s in secrets)


def dns_name_part(text):
    return re.sub(r"-+", "-", re.sub(r"[^a-z0-9\-]", "-", str(text).strip().lower()))


def app_name_label(app_name):
    """KubernetesConf.getAppNameLabel: sanitized, abbreviated to 63, no edge dashes."""
    return dns_name_part(app_name)[:63].strip("-")


def unique_id(rng):
    """KubernetesUtils.uniqueID: 24 random bits then the 40 low bits of the time in ms."""
    if rng.deterministic:
        return "%06x%010x" % (rng.getrandbits(24), rng.getrandbits(40))
    return "%06x%x" % (rng.getrandbits(24), int(time.time() * 1000) & 0xFFFFFFFFFF)


def resource_name_prefix(app_name, rng):
    """KubernetesConf.getResourceNamePrefix."""
    name = dns_name_part("%s-%s" % (app_name, unique_id(rng)))
    name = re.sub(r"^-", "", name)
    return re.sub(r"^[0-9]", "x", name)


class Rng(random.Random):
    """Random ids; with a seed (spark-emulator.gleaner.io/seed) they repeat run to run."""

    def __init__(self, seed=None):
        super().__init__(seed)
        self.deterministic = seed is not None

    def uuid(self):
        if self.deterministic:
            return str(uuid.UUID(int=self.getrandbits(128), version=4))
        return str(uuid.uuid4())


def operator_templates(app):
    """buildDriverPodTemplate / buildExecutorPodTemplate: the user's template (or one with
    only the Spark container) with an owner reference to the SparkApplication; the
    executors' is no controller reference (the driver pod will be their controller)."""
    meta = app["metadata"]
    spec = app.get("spec") or {}
    owner = {"apiVersion": "sparkoperator.k8s.io/v1beta2", "kind": "SparkApplication",
             "name": meta["name"], "uid": meta.get("uid"), "controller": True,
             "blockOwnerDeletion": True}
    out = {}
    for role, default in (("driver", DRIVER_CONTAINER), ("executor", EXECUTOR_CONTAINER)):
        template = (spec.get(role) or {}).get("template")
        template = copy.deepcopy(template) if template is not None else \
            {"spec": {"containers": [{"name": default}]}}
        ref = dict(owner)
        if role == "executor":
            del ref["controller"], ref["blockOwnerDeletion"]
        tmeta = template.setdefault("metadata", {})
        refs = tmeta.setdefault("ownerReferences", [])
        if ref not in refs:
            refs.append(ref)
        out[role] = template
    return out


def primary_resource(app):
    spec = app.get("spec") or {}
    return spec.get("mainApplicationFile")


# --- Spark's pod building -------------------------------------------------------------
def select_spark_container(template, name):
    """KubernetesUtils.selectSparkContainer: the container with that name if exactly one
    has it, else the first; it is taken out of the pod and put back last."""
    pod = {"apiVersion": "v1", "kind": "Pod",
           "metadata": copy.deepcopy(template.get("metadata") or {}),
           "spec": copy.deepcopy(template.get("spec") or {})}
    containers = pod["spec"].get("containers") or []
    named = [c for c in containers if c.get("name") == name]
    if len(named) == 1:
        container = named[0]
        rest = [c for c in containers if c is not container]
    elif containers:
        container, rest = containers[0], containers[1:]
    else:
        container, rest = {}, []
    pod["spec"]["containers"] = rest
    for k in ("name", "namespace", "uid", "resourceVersion", "creationTimestamp"):
        pod["metadata"].pop(k, None)
    return pod, copy.deepcopy(container)


def merge_env(container, entries):
    env = container.setdefault("env", [])
    env.extend(entries)


def spark_labels(conf, role, app_id, spark_version, executor_id=None):
    custom = prefixed(conf, "spark.kubernetes.%s.label." % role)
    preset = {SPARK_VERSION_LABEL: spark_version, APP_SELECTOR: app_id,
              APP_NAME_LABEL: app_name_label(conf.get("spark.app.name", "spark")), ROLE: role}
    if role == "executor":
        preset[EXEC_ID] = str(executor_id)
        preset[RESOURCE_PROFILE_ID] = "0"
    for k in preset:
        if k in custom:
            raise SubmitError("Label with key %s is not allowed as it is reserved for "
                              "Spark bookkeeping operations." % k)
    custom.update(preset)
    return custom


def substitute_ids(value, app_id, executor_id):
    return str(value).replace("{{APP_ID}}", app_id).replace("{{EXECUTOR_ID}}", executor_id)


def build_driver_pod(app, conf, template, app_id, driver_prefix, rng):
    """What spark-submit (KubernetesDriverBuilder's feature steps) creates."""
    spec = defaulted_spec(app)
    image = conf.get("spark.kubernetes.driver.container.image") or \
        conf.get("spark.kubernetes.container.image")
    if not image:
        raise SubmitError("Exception in thread \"main\" org.apache.spark.SparkException: "
                          "Must specify the driver container image")
    if not primary_resource(app):
        raise SubmitError("Error: Must specify a primary resource (JAR or Python or R file)")
    pod, container = select_spark_container(
        template, conf.get("spark.kubernetes.driver.podTemplateContainerName"))
    cores = conf_int(conf, "spark.driver.cores", 1)
    request_cores = conf.get("spark.kubernetes.driver.request.cores", str(cores))
    heap, overhead = memory_settings(conf, "driver", spec.get("type"))
    memory = "%dMi" % (heap + overhead)
    container["name"] = container.get("name") or DRIVER_CONTAINER
    container["image"] = image
    container["imagePullPolicy"] = conf.get("spark.kubernetes.container.image.pullPolicy",
                                            "IfNotPresent")
    container.setdefault("ports", []).extend([
        {"name": "driver-rpc-port", "containerPort": conf_int(conf, "spark.driver.port", 7078),
         "protocol": "TCP"},
        {"name": "blockmanager", "containerPort": conf_int(
            conf, "spark.driver.blockManager.port", conf_int(conf, "spark.blockManager.port",
                                                             7079)), "protocol": "TCP"},
        {"name": "spark-ui", "containerPort": conf_int(conf, "spark.ui.port", 4040),
         "protocol": "TCP"}])
    merge_env(container, [{"name": "SPARK_USER", "value": "root"},
                          {"name": "SPARK_APPLICATION_ID", "value": app_id}] +
              [{"name": k, "value": v} for k, v in
               prefixed(conf, "spark.kubernetes.driverEnv.").items()] +
              [{"name": "SPARK_DRIVER_BIND_ADDRESS", "valueFrom": {
                  "fieldRef": {"apiVersion": "v1", "fieldPath": "status.podIP"}}}])
    resources = container.setdefault("resources", {})
    requests, limits = resources.setdefault("requests", {}), resources.setdefault("limits", {})
    requests["cpu"] = request_cores
    if conf.get("spark.kubernetes.driver.limit.cores"):
        limits["cpu"] = conf["spark.kubernetes.driver.limit.cores"]
    requests["memory"] = limits["memory"] = memory
    limits.update(custom_resources(conf, "driver"))
    args = ["driver", "--properties-file", "/opt/spark/conf/spark.properties"]
    if spec.get("mainClass"):
        args += ["--class", spec["mainClass"]]
    container["args"] = args + [primary_resource(app)] + list(spec.get("arguments") or [])
    local_dir = "spark-local-dir-1"
    container.setdefault("volumeMounts", []).extend([
        {"name": local_dir, "mountPath": "/var/data/spark-" + rng.uuid()},
        {"name": "spark-conf-volume-driver", "mountPath": "/opt/spark/conf"}])

    meta = pod["metadata"]
    meta["name"] = conf["spark.kubernetes.driver.pod.name"]
    meta.setdefault("labels", {}).update(spark_labels(
        conf, "driver", app_id, spec.get("sparkVersion") or DEFAULT_SPARK_VERSION))
    annotations = {k: substitute_ids(v, app_id, "")
                   for k, v in prefixed(conf, "spark.kubernetes.driver.annotation.").items()}
    if annotations:
        meta.setdefault("annotations", {}).update(annotations)
    pspec = pod["spec"]
    pspec["restartPolicy"] = "Never"
    apply_selector_and_pull_secrets(pspec, conf, "driver")
    scheduler = conf.get("spark.kubernetes.driver.scheduler.name") or \
        conf.get("spark.kubernetes.scheduler.name")
    if scheduler:
        pspec["schedulerName"] = scheduler
    sa = conf.get("spark.kubernetes.authenticate.driver.serviceAccountName")
    if sa and not pspec.get("serviceAccount") and not pspec.get("serviceAccountName"):
        pspec["serviceAccount"] = pspec["serviceAccountName"] = sa
    config_map = "spark-drv-%s-conf-map" % hashlib.sha1(
        (driver_prefix + app_id).encode()).hexdigest()[:16]
    pspec.setdefault("volumes", []).extend([
        {"name": local_dir, "emptyDir": {}},
        {"name": "spark-conf-volume-driver", "configMap": {
            "name": config_map, "items": [{"key": "spark.properties",
                                           "path": "spark.properties", "mode": 420}],
            "defaultMode": 420}}])
    pspec["containers"] = pspec.get("containers", []) + [container]
    return pod


def build_executor_pod(app_spec, conf, template, app_id, prefix, executor_id, driver_pod,
                       rng):
    """BasicExecutorFeatureStep (+ the credentials and local-dirs steps)."""
    pod, container = select_spark_container(
        template, conf.get("spark.kubernetes.executor.podTemplateContainerName"))
    name = "%s-exec-%d" % (prefix, executor_id)
    hostname = re.sub(r"[^\w-]+", "_", re.sub(r"^[^\w]+", "", name[-63:]))
    cores = conf_int(conf, "spark.executor.cores", 1)
    request_cores = conf.get("spark.kubernetes.executor.request.cores", str(cores))
    heap, overhead = memory_settings(conf, "executor", app_spec.get("type"))
    total = heap + overhead
    if app_spec.get("type") == "Python" and conf.get("spark.executor.pyspark.memory"):
        total += bytes_as_mib(conf["spark.executor.pyspark.memory"])
    if conf_bool(conf, "spark.memory.offHeap.enabled", False):
        total += bytes_as_mib(conf.get("spark.memory.offHeap.size", "0"), "b")
    image = conf.get("spark.kubernetes.executor.container.image") or \
        conf.get("spark.kubernetes.container.image")
    container["name"] = container.get("name") or EXECUTOR_CONTAINER
    container["image"] = image
    container["imagePullPolicy"] = conf.get("spark.kubernetes.container.image.pullPolicy",
                                            "IfNotPresent")
    resources = container.setdefault("resources", {})
    requests, limits = resources.setdefault("requests", {}), resources.setdefault("limits", {})
    requests["memory"] = limits["memory"] = "%dMi" % total
    requests["cpu"] = request_cores
    limits.update(custom_resources(conf, "executor"))
    if conf.get("spark.kubernetes.executor.limit.cores"):
        limits["cpu"] = conf["spark.kubernetes.executor.limit.cores"]
    driver_meta = driver_pod["metadata"]
    driver_url = "spark://CoarseGrainedScheduler@%s:%d" % (
        conf.get("spark.driver.host", driver_meta["name"]),
        conf_int(conf, "spark.driver.port", 7078))
    merge_env(container, [
        {"name": "SPARK_USER", "value": "root"},
        {"name": "SPARK_DRIVER_URL", "value": driver_url},
        {"name": "SPARK_EXECUTOR_CORES", "value": str(cores)},
        {"name": "SPARK_EXECUTOR_MEMORY", "value": "%dm" % heap},
        {"name": "SPARK_APPLICATION_ID", "value": app_id},
        {"name": "SPARK_CONF_DIR", "value": "/opt/spark/conf"},
        {"name": "SPARK_EXECUTOR_ID", "value": str(executor_id)},
        {"name": "SPARK_RESOURCE_PROFILE_ID", "value": "0"}] +
        [{"name": k, "value": v} for k, v in prefixed(conf, "spark.executorEnv.").items()] +
        [{"name": "SPARK_EXECUTOR_POD_IP", "valueFrom": {"fieldRef": {
            "apiVersion": "v1", "fieldPath": "status.podIP"}}},
         {"name": "SPARK_EXECUTOR_POD_NAME", "valueFrom": {"fieldRef": {
             "apiVersion": "v1", "fieldPath": "metadata.name"}}}])
    container["ports"] = [{"name": "blockmanager",
                           "containerPort": conf_int(conf, "spark.blockManager.port", 7079)}]
    container["args"] = list(container.get("args") or []) + ["executor"]
    if conf_bool(conf, "spark.decommission.enabled", False):
        # BasicExecutorFeatureStep: the container's preStop hook runs the decommission
        # script (decom.sh in Spark's image), which sends the executor JVM SIGPWR and waits
        # for it to exit.
        container["lifecycle"] = {"preStop": {"exec": {"command": [conf.get(
            "spark.kubernetes.decommission.script", DECOMMISSION_SCRIPT)]}}}
    local_dir = "spark-local-dir-1"
    container.setdefault("volumeMounts", []).extend([
        {"name": local_dir, "mountPath": "/var/data/spark-" + rng.uuid()},
        {"name": "spark-conf-volume-exec", "mountPath": "/opt/spark/conf"}])

    meta = pod["metadata"]
    meta["name"] = name
    meta.setdefault("labels", {}).update(spark_labels(
        conf, "executor", app_id, app_spec.get("sparkVersion") or DEFAULT_SPARK_VERSION,
        executor_id))
    annotations = {k: substitute_ids(v, app_id, str(executor_id)) for k, v in
                   prefixed(conf, "spark.kubernetes.executor.annotation.").items()}
    if annotations:
        meta.setdefault("annotations", {}).update(annotations)
    meta.setdefault("ownerReferences", []).append({
        "apiVersion": "v1", "kind": "Pod", "name": driver_meta["name"],
        "uid": driver_meta["uid"], "controller": True})
    pspec = pod["spec"]
    pspec["hostname"] = hostname
    pspec["restartPolicy"] = "Never"
    apply_selector_and_pull_secrets(pspec, conf, "executor")
    config_map = "spark-exec-%s-conf-map" % hashlib.sha1(prefix.encode()).hexdigest()[:16]
    pspec.setdefault("volumes", []).extend([
        {"name": local_dir, "emptyDir": {}},
        {"name": "spark-conf-volume-exec", "configMap": {
            "name": config_map, "items": [], "defaultMode": 420}}])
    scheduler = conf.get("spark.kubernetes.executor.scheduler.name") or \
        conf.get("spark.kubernetes.scheduler.name")
    if scheduler:
        pspec["schedulerName"] = scheduler
    sa = conf.get("spark.kubernetes.authenticate.executor.serviceAccountName") or \
        (driver_pod.get("spec") or {}).get("serviceAccountName")
    if sa and not pspec.get("serviceAccount") and not pspec.get("serviceAccountName"):
        pspec["serviceAccount"] = pspec["serviceAccountName"] = sa
    pspec["containers"] = pspec.get("containers", []) + [container]
    return pod


# --- the operator's pod webhook (sparkpod_defaulter.go mutateSparkPod) ---------------
def find_container(pod, role):
    names = [DRIVER_CONTAINER] if role == "driver" else ["executor", EXECUTOR_CONTAINER]
    containers = pod["spec"].get("containers") or []
    for i, c in enumerate(containers):
        if c.get("name") in names:
            return i
    return 0


def mutate_spark_pod(pod, app):
    """What the operator's mutating webhook does to a pod it launched (failurePolicy Fail:
    the chart's default), for the fields this emulator models."""
    spec = app.get("spec") or {}
    role = (pod["metadata"].get("labels") or {}).get(ROLE)
    part = spec.get(role) or {}
    pspec = pod["spec"]
    containers = pspec.get("containers") or []
    i = find_container(pod, role)
    main = containers[i] if containers else None
    if role == "driver":
        owner = {"apiVersion": "sparkoperator.k8s.io/v1beta2", "kind": "SparkApplication",
                 "name": app["metadata"]["name"], "uid": app["metadata"].get("uid"),
                 "controller": True, "blockOwnerDeletion": True}
        refs = pod["metadata"].setdefault("ownerReferences", [])
        if owner not in refs:
            refs.append(owner)
    if main is not None:
        if part.get("env"):
            main.setdefault("env", []).extend(copy.deepcopy(part["env"]))
        if part.get("envFrom"):
            main.setdefault("envFrom", []).extend(copy.deepcopy(part["envFrom"]))
        volumes = {v.get("name"): v for v in spec.get("volumes") or []}
        added = set()
        for mount in part.get("volumeMounts") or []:
            if mount.get("name", "").startswith("spark-local-dir-"):
                continue
            if mount.get("name") in volumes:
                if mount["name"] not in added:
                    pspec.setdefault("volumes", []).append(copy.deepcopy(volumes[mount["name"]]))
                    added.add(mount["name"])
                main.setdefault("volumeMounts", []).append(copy.deepcopy(mount))
        if part.get("memoryLimit"):
            main.setdefault("resources", {}).setdefault("limits", {})["memory"] = \
                java_memory_to_k8s(part["memoryLimit"])
        if part.get("securityContext"):
            main["securityContext"] = copy.deepcopy(part["securityContext"])
        if part.get("lifecycle"):
            main["lifecycle"] = copy.deepcopy(part["lifecycle"])
    if part.get("hostNetwork"):
        pspec["hostNetwork"] = True
        pspec["dnsPolicy"] = "ClusterFirstWithHostNet"
    if part.get("hostAliases"):
        pspec.setdefault("hostAliases", []).extend(copy.deepcopy(part["hostAliases"]))
    if part.get("initContainers"):
        pspec.setdefault("initContainers", []).extend(copy.deepcopy(part["initContainers"]))
    if part.get("sidecars"):
        pspec["containers"] = containers + copy.deepcopy(part["sidecars"])
    if part.get("dnsConfig"):
        pspec["dnsConfig"] = copy.deepcopy(part["dnsConfig"])
    if part.get("priorityClassName"):
        pspec["priorityClassName"] = part["priorityClassName"]
        pspec.pop("priority", None)
        pspec.pop("preemptionPolicy", None)
    scheduler = spec.get("batchScheduler") or part.get("schedulerName")
    if scheduler:
        pspec["schedulerName"] = scheduler
    pspec.setdefault("nodeSelector", {}).update(part.get("nodeSelector") or {})
    if part.get("affinity"):
        pspec["affinity"] = copy.deepcopy(part["affinity"])
    pspec["tolerations"] = list(pspec.get("tolerations") or []) + \
        copy.deepcopy(part.get("tolerations") or [])
    if part.get("podSecurityContext"):
        pspec["securityContext"] = copy.deepcopy(part["podSecurityContext"])
    if part.get("terminationGracePeriodSeconds") is not None:
        pspec["terminationGracePeriodSeconds"] = part["terminationGracePeriodSeconds"]
    if part.get("shareProcessNamespace") is not None:
        pspec["shareProcessNamespace"] = part["shareProcessNamespace"]
    if not pspec["nodeSelector"]:
        del pspec["nodeSelector"]  # an empty map is omitted on the wire
    if not pspec["tolerations"]:
        del pspec["tolerations"]
    return pod
