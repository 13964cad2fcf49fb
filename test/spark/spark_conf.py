"""Spark configuration as spark-submit and Spark 3.5 read it: the properties the
operator passes for a SparkApplication (internal/controller/sparkapplication/
submission.go, after the defaulting webhook), Spark's size, time, boolean and number
strings (JavaUtils), the memory overhead and custom resources of a driver or executor,
and the operator's Java-to-Kubernetes memory strings."""

import copy
import re

# Labels the operator has spark-submit put on its pods (spark-operator pkg/common/spark.go).
OP_PREFIX = "sparkoperator.k8s.io/"
OP_APP_NAME = OP_PREFIX + "app-name"
OP_LAUNCHED = OP_PREFIX + "launched-by-spark-operator"
OP_MUTATED = OP_PREFIX + "mutated-by-spark-operator"
OP_SUBMISSION = OP_PREFIX + "submission-id"
KUEUE_PREFIX = "kueue.x-k8s.io/"

DRIVER_CONTAINER = "spark-kubernetes-driver"
EXECUTOR_CONTAINER = "spark-kubernetes-executor"
NON_JVM_TYPES = ("Python", "R")

MEMORY_OVERHEAD_MIN_MIB = 384  # ResourceProfile.MEMORY_OVERHEAD_MIN_MIB
NON_JVM_MEMORY_OVERHEAD_FACTOR = 0.4


# --- Spark configuration strings ----------------------------------------------------
_BYTE_UNITS = {"b": 1, "k": 2 ** 10, "kb": 2 ** 10, "m": 2 ** 20, "mb": 2 ** 20,
               "g": 2 ** 30, "gb": 2 ** 30, "t": 2 ** 40, "tb": 2 ** 40,
               "p": 2 ** 50, "pb": 2 ** 50}
_TIME_UNITS = {"us": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "min": 60.0, "h": 3600.0,
               "d": 86400.0}


def bytes_as_mib(text, default_unit="m"):
    """JavaUtils.byteStringAs(text, MiB): integer with an optional binary unit."""
    s = str(text).strip().lower()
    m = re.fullmatch(r"([0-9]+)([a-z]+)?", s)
    if not m:
        if re.fullmatch(r"([0-9]+\.[0-9]+)([a-z]+)?", s):
            raise ValueError("Fractional values are not supported. Input was: " + s)
        raise ValueError("Invalid size string: " + s)
    unit = m.group(2) or default_unit
    if unit not in _BYTE_UNITS:
        raise ValueError("Invalid suffix: \"%s\"" % unit)
    return int(m.group(1)) * _BYTE_UNITS[unit] // _BYTE_UNITS["m"]


def time_as_seconds(text, default_unit="ms"):
    """JavaUtils.timeStringAs: integer with an optional unit (us, ms, s, m, min, h, d)."""
    s = str(text).strip().lower()
    m = re.fullmatch(r"(-?[0-9]+)([a-z]+)?", s)
    if not m:
        raise ValueError("Invalid time string: " + s)
    unit = m.group(2) or default_unit
    if unit not in _TIME_UNITS:
        raise ValueError("Invalid suffix: \"%s\"" % unit)
    return int(m.group(1)) * _TIME_UNITS[unit]


def conf_bool(conf, key, default):
    value = conf.get(key)
    if value is None:
        return default
    return str(value).strip().lower() == "true"


def conf_int(conf, key, default):
    value = conf.get(key)
    return default if value is None else int(str(value).strip())


def conf_float(conf, key, default):
    value = conf.get(key)
    return default if value is None else float(str(value).strip())


def prefixed(conf, prefix):
    return {k[len(prefix):]: v for k, v in conf.items() if k.startswith(prefix)}


# --- spark-submit arguments (operator submission.go) ----------------------------------
def driver_pod_name(app):
    """util.GetDriverPodName."""
    spec = app.get("spec") or {}
    name = (spec.get("driver") or {}).get("podName")
    if name:
        return name
    conf = spec.get("sparkConf") or {}
    if conf.get("spark.kubernetes.driver.pod.name"):
        return conf["spark.kubernetes.driver.pod.name"]
    return "%s-driver" % app["metadata"]["name"]


def defaulted_spec(app):
    """The SparkApplication defaulting webhook (api/v1beta2/defaults.go): the chart runs it
    on create, so the operator reads these values back from the stored object. The
    emulator cannot change what the API server stored; it applies them when it reads."""
    spec = copy.deepcopy(app.get("spec") or {})
    conf = spec.get("sparkConf") or {}
    spec.setdefault("type", "Scala")
    spec.setdefault("mode", "cluster")
    restart = spec.setdefault("restartPolicy", {})
    restart.setdefault("type", "Never")
    if restart["type"] != "Never":
        restart.setdefault("onFailureRetryInterval", 5)
        restart.setdefault("onSubmissionFailureRetryInterval", 5)
    driver = spec.setdefault("driver", {})
    if "spark.driver.cores" not in conf and driver.get("cores") is None:
        driver["cores"] = 1
    if "spark.driver.memory" not in conf and driver.get("memory") is None:
        driver["memory"] = "1g"
    executor = spec.setdefault("executor", {})
    if "spark.executor.cores" not in conf and executor.get("cores") is None:
        executor["cores"] = 1
    if "spark.executor.memory" not in conf and executor.get("memory") is None:
        executor["memory"] = "1g"
    da = spec.get("dynamicAllocation")
    da_enabled = da.get("enabled", False) if isinstance(da, dict) else \
        str(conf.get("spark.dynamicallocation.enabled", "")).lower() == "true"
    if executor.get("instances") is None and not conf.get("spark.executor.instances") \
            and not da_enabled:
        executor["instances"] = 1
    if da_enabled and isinstance(da, dict) and da.get("shuffleTrackingEnabled") is None:
        da["shuffleTrackingEnabled"] = True
    return spec


def submission_conf(app, submission_id):
    """The Spark properties spark-submit ends up with: sparkConf first, then what the
    operator passes as --conf (later ones win, as in SparkSubmitArguments), then --name."""
    meta, spec = app["metadata"], defaulted_spec(app)
    driver, executor = spec.get("driver") or {}, spec.get("executor") or {}
    conf = {}

    def put(key, value):
        if value is not None:
            conf[key] = value if isinstance(value, str) else \
                ("true" if value is True else "false" if value is False else str(value))

    if spec.get("memoryOverheadFactor"):
        put("spark.kubernetes.memoryOverheadFactor", spec["memoryOverheadFactor"])
    put("spark.kubernetes.namespace", meta.get("namespace"))
    if spec.get("image"):
        put("spark.kubernetes.container.image", spec["image"])
    if spec.get("imagePullPolicy"):
        put("spark.kubernetes.container.image.pullPolicy", spec["imagePullPolicy"])
    if spec.get("imagePullSecrets"):
        put("spark.kubernetes.container.image.pullSecrets", ",".join(spec["imagePullSecrets"]))
    if spec.get("pythonVersion"):
        put("spark.kubernetes.pyspark.pythonVersion", spec["pythonVersion"])
    put("spark.kubernetes.submission.waitAppCompletion", "false")
    for k, v in (spec.get("sparkConf") or {}).items():
        if k != "spark.kubernetes.driver.pod.name":
            put(k, v)
    for k, v in (spec.get("hadoopConf") or {}).items():
        put("spark.hadoop." + k, v)
    put("spark.kubernetes.driver.pod.name", driver_pod_name(app))

    app_labels = {k: v for k, v in (meta.get("labels") or {}).items()
                  if not k.startswith(KUEUE_PREFIX)}
    for role, part, image_key, sa_key in (
            ("driver", driver, "spark.kubernetes.driver.container.image",
             "spark.kubernetes.authenticate.driver.serviceAccountName"),
            ("executor", executor, "spark.kubernetes.executor.container.image",
             "spark.kubernetes.authenticate.executor.serviceAccountName")):
        label = "spark.kubernetes.%s.label." % role
        put(label + OP_APP_NAME, meta["name"])
        put(label + OP_LAUNCHED, "true")
        if part.get("template") is None:  # sparkVersion < 3 also gets it; not modelled
            put(label + OP_MUTATED, "true")
        put(label + OP_SUBMISSION, submission_id)
        if role == "executor" and executor.get("instances") is not None:
            put("spark.executor.instances", executor["instances"])
        if part.get("image"):
            put(image_key, part["image"])
        elif spec.get("image"):
            put(image_key, spec["image"])
        if part.get("cores") is not None:
            put("spark.%s.cores" % role, part["cores"])
        if part.get("coreRequest") is not None:
            put("spark.kubernetes.%s.request.cores" % role, part["coreRequest"])
        if part.get("coreLimit") is not None:
            put("spark.kubernetes.%s.limit.cores" % role, part["coreLimit"])
        if part.get("memory") is not None:
            put("spark.%s.memory" % role, part["memory"])
        if part.get("memoryOverhead") is not None:
            put("spark.%s.memoryOverhead" % role, part["memoryOverhead"])
        if part.get("serviceAccount") is not None:
            put(sa_key, part["serviceAccount"])
        if role == "executor" and part.get("deleteOnTermination") is not None:
            put("spark.kubernetes.executor.deleteOnTermination", part["deleteOnTermination"])
        for k, v in app_labels.items():
            put(label + k, v)
        for k, v in (part.get("labels") or {}).items():
            put(label + k, v)
        for k, v in (part.get("annotations") or {}).items():
            put("spark.kubernetes.%s.annotation.%s" % (role, k), v)
        if part.get("javaOptions") is not None:
            put("spark.%s.extraJavaOptions" % role, part["javaOptions"])
    for k, v in (spec.get("nodeSelector") or {}).items():
        put("spark.kubernetes.node.selector." + k, v)
    da = spec.get("dynamicAllocation") or {}
    if da.get("enabled"):
        put("spark.dynamicAllocation.enabled", "true")
        put("spark.dynamicAllocation.initialExecutors", da.get("initialExecutors"))
        put("spark.dynamicAllocation.minExecutors", da.get("minExecutors"))
        put("spark.dynamicAllocation.maxExecutors", da.get("maxExecutors"))
        put("spark.dynamicAllocation.shuffleTracking.enabled",
            da.get("shuffleTrackingEnabled", True))
        put("spark.dynamicAllocation.shuffleTracking.timeout", da.get("shuffleTrackingTimeout"))
    put("spark.kubernetes.driver.podTemplateContainerName", DRIVER_CONTAINER)
    put("spark.kubernetes.executor.podTemplateContainerName", EXECUTOR_CONTAINER)
    put("spark.app.name", meta["name"])  # --name wins over a sparkConf spark.app.name
    put("spark.submit.deployMode", spec.get("mode", "cluster"))
    return conf


def memory_settings(conf, role, app_type):
    """(heap MiB, overhead MiB) as BasicDriverFeatureStep / ResourceProfile compute them."""
    default_factor = conf_float(conf, "spark.kubernetes.memoryOverheadFactor", 0.1)
    if app_type in NON_JVM_TYPES and "spark.kubernetes.memoryOverheadFactor" not in conf:
        default_factor = NON_JVM_MEMORY_OVERHEAD_FACTOR
    factor = conf_float(conf, "spark.%s.memoryOverheadFactor" % role, default_factor)
    heap = bytes_as_mib(conf.get("spark.%s.memory" % role, "1g"))
    if conf.get("spark.%s.memoryOverhead" % role) is not None:
        overhead = bytes_as_mib(conf["spark.%s.memoryOverhead" % role])
    else:
        overhead = max(int(factor * heap), MEMORY_OVERHEAD_MIN_MIB)
    return heap, overhead


def custom_resources(conf, role):
    """spark.{driver,executor}.resource.<name>.amount with .vendor: limits vendor/name."""
    out = {}
    for key, value in prefixed(conf, "spark.%s.resource." % role).items():
        if key.endswith(".amount"):
            name = key[:-len(".amount")]
            vendor = conf.get("spark.%s.resource.%s.vendor" % (role, name))
            if vendor:
                out["%s/%s" % (vendor, name)] = str(value)
    return out


def java_memory_to_k8s(text):
    """util.ConvertJavaMemoryStringToK8sMemoryString: 512m -> 512Mi, 1g -> 1Gi."""
    s = str(text).strip()
    for java, k8s in (("k", "Ki"), ("m", "Mi"), ("g", "Gi"), ("t", "Ti"), ("p", "Pi")):
        for suffix in (java + "b", java):
            if s.lower().endswith(suffix):
                return s[:-len(suffix)] + k8s
    return s
