"""What the API server does to particular resources when they are written (create, update,
patch): the defaulting, canonicalisation and validation of MutatingWebhookConfigurations,
Secrets and PriorityClasses, with 422 Invalid answers in apimachinery's field-error form."""

import base64
import binascii
import re
import urllib.parse

from store import ApiError
from kselectors import validate_label_selector

SYSTEM_PRIORITY_CLASSES = {"system-node-critical": 2000001000,
                           "system-cluster-critical": 2000000000}
HIGHEST_USER_DEFINABLE_PRIORITY = 1000000000

_REASONS = {"Required": "FieldValueRequired", "Invalid": "FieldValueInvalid",
            "NotSupported": "FieldValueNotSupported", "Duplicate": "FieldValueDuplicate",
            "Forbidden": "FieldValueForbidden"}
_DNS1123_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")


def _go_value(value):
    if isinstance(value, str):
        return '"%s"' % value.replace("\\", "\\\\").replace('"', '\\"')
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _cause_message(kind, value, detail):
    """field.Error's ErrorBody: the type's words, the value where it says one, the detail."""
    if kind == "Required":
        return "Required value" + (": " + detail if detail else "")
    if kind == "Forbidden":
        return "Forbidden" + (": " + detail if detail else "")
    if kind == "Duplicate":
        return "Duplicate value: " + _go_value(value)
    if kind == "NotSupported":
        return "Unsupported value: %s: supported values: %s" % (
            _go_value(value), ", ".join(_go_value(v) for v in detail))
    return "Invalid value: %s%s" % (_go_value(value), ": " + detail if detail else "")


def invalid(kind, group, name, errors):
    """apierrors.NewInvalid: errors are (field, type, value, detail)."""
    causes = [{"reason": _REASONS[t], "message": _cause_message(t, v, d), "field": f}
              for f, t, v, d in errors]
    texts = ["%s: %s" % (c["field"], c["message"]) for c in causes]
    qualified = kind + ("." + group if group else "")
    return ApiError(422, "Invalid", '%s "%s" is invalid: %s' % (
        qualified, name, texts[0] if len(texts) == 1 else "[" + ", ".join(texts) + "]"),
        {"name": name, "group": group, "kind": kind, "causes": causes})


def _name(obj):
    meta = obj.get("metadata") or {}
    return meta.get("name") or meta.get("generateName") or ""


# --- admissionregistration.k8s.io/v1 MutatingWebhookConfiguration -----------------------
def _default_webhook(hook):
    """SetDefaults_MutatingWebhook, SetDefaults_Rule and SetDefaults_ServiceReference."""
    hook.setdefault("failurePolicy", "Fail")
    hook.setdefault("matchPolicy", "Equivalent")
    hook.setdefault("namespaceSelector", {})
    hook.setdefault("objectSelector", {})
    hook.setdefault("timeoutSeconds", 10)
    hook.setdefault("reinvocationPolicy", "Never")
    for rule in hook.get("rules") or []:
        if isinstance(rule, dict):
            rule.setdefault("scope", "*")
    service = (hook.get("clientConfig") or {}).get("service")
    if isinstance(service, dict):
        service.setdefault("port", 443)


def _validate_url(url, path):
    try:
        parsed = urllib.parse.urlsplit(url)
    except ValueError as e:
        return [(path, "Invalid", url, "url must be a valid URL: %s" % e)]
    errors = []
    if parsed.scheme != "https":
        errors.append((path, "Invalid", parsed.scheme, "'https' is the only allowed URL scheme"))
    if not parsed.hostname:
        errors.append((path, "Invalid", parsed.netloc, "host must be specified"))
    if "@" in parsed.netloc:
        errors.append((path, "Invalid", parsed.netloc,
                       "user information is not permitted in the URL"))
    if parsed.fragment:
        errors.append((path, "Invalid", parsed.fragment, "fragments are not permitted in the URL"))
    if parsed.query:
        errors.append((path, "Invalid", parsed.query,
                       "query parameters are not permitted in the URL"))
    return errors


def _validate_webhook(hook, path, seen):
    errors = []
    name = hook.get("name")
    if not name:
        errors.append((path + ".name", "Required", None, ""))
    elif len(name) > 253 or not _DNS1123_SUBDOMAIN.match(name):
        errors.append((path + ".name", "Invalid", name, "a lowercase RFC 1123 subdomain must "
                       "consist of lower case alphanumeric characters, '-' or '.', and must start"
                       " and end with an alphanumeric character"))
    elif len(name.split(".")) < 3:
        errors.append((path + ".name", "Invalid", name,
                       "should be a domain with at least three segments separated by dots"))
    if name and name in seen:
        errors.append((path + ".name", "Duplicate", name, None))
    seen.add(name)
    for j, rule in enumerate(hook.get("rules") or []):
        where = "%s.rules[%d]" % (path, j)
        if not isinstance(rule, dict):
            errors.append((where, "Invalid", rule, "must be an object"))
            continue
        for field in ("operations", "apiGroups", "apiVersions", "resources"):
            if not rule.get(field):
                errors.append((where + "." + field, "Required", None, ""))
        for op in rule.get("operations") or []:
            if op not in ("*", "CREATE", "UPDATE", "DELETE", "CONNECT"):
                errors.append((where + ".operations", "NotSupported", op,
                               ["*", "CONNECT", "CREATE", "DELETE", "UPDATE"]))
        if rule.get("scope") not in ("*", "Cluster", "Namespaced"):
            errors.append((where + ".scope", "NotSupported", rule.get("scope"),
                           ["*", "Cluster", "Namespaced"]))
    for field, allowed in (("failurePolicy", ["Fail", "Ignore"]),
                           ("matchPolicy", ["Equivalent", "Exact"]),
                           ("reinvocationPolicy", ["IfNeeded", "Never"])):
        if hook.get(field) not in allowed:
            errors.append((path + "." + field, "NotSupported", hook.get(field), allowed))
    side_effects = hook.get("sideEffects")
    if side_effects is None:
        errors.append((path + ".sideEffects", "Required", None,
                       "must specify one of None, NoneOnDryRun"))
    elif side_effects not in ("None", "NoneOnDryRun"):
        errors.append((path + ".sideEffects", "NotSupported", side_effects,
                       ["None", "NoneOnDryRun"]))
    timeout = hook.get("timeoutSeconds")
    if not isinstance(timeout, int) or isinstance(timeout, bool) or not 1 <= timeout <= 30:
        errors.append((path + ".timeoutSeconds", "Invalid", timeout,
                       "the timeout value must be between 1 and 30 seconds"))
    versions = hook.get("admissionReviewVersions") or []
    if not versions:
        errors.append((path + ".admissionReviewVersions", "Required", None,
                       "must specify one of v1, v1beta1"))
    elif not any(v in ("v1", "v1beta1") for v in versions):
        errors.append((path + ".admissionReviewVersions", "Invalid", versions[0],
                       "must include at least one of v1, v1beta1"))
    for field in ("namespaceSelector", "objectSelector"):
        errors += validate_label_selector(hook.get(field), path + "." + field)
    if hook.get("matchConditions"):
        errors.append((path + ".matchConditions", "Forbidden", None,
                       "CEL match conditions are not evaluated by this test API server"))
    config = hook.get("clientConfig")
    where = path + ".clientConfig"
    if not isinstance(config, dict) or bool(config.get("url")) == bool(config.get("service")):
        errors.append((where, "Required", None, "exactly one of url or service is required"))
    elif config.get("url"):
        errors += _validate_url(config["url"], where + ".url")
    else:
        service = config["service"]
        for field in ("namespace", "name"):
            if not service.get(field):
                errors.append((where + ".service." + field, "Required", None, "service " + field
                               + " is required"))
        if "path" in service and not str(service["path"]).startswith("/"):
            errors.append((where + ".service.path", "Invalid", service["path"],
                           "must start with a '/'"))
        port = service.get("port")
        if not isinstance(port, int) or not 1 <= port <= 65535:
            errors.append((where + ".service.port", "Invalid", port,
                           "port is not valid: must be between 1 and 65535, inclusive"))
    if isinstance(config, dict) and config.get("caBundle"):
        try:
            base64.b64decode(config["caBundle"], validate=True)
        except (binascii.Error, ValueError, TypeError) as e:
            # A []byte field: the request does not even decode.
            raise ApiError(400, "BadRequest", "MutatingWebhookConfiguration in version \"v1\" "
                           "cannot be handled as a MutatingWebhookConfiguration: illegal base64 "
                           "data in webhooks[].clientConfig.caBundle: %s" % e)
    return errors


def _mutating_webhook_configuration(store, obj, old):
    hooks = obj.get("webhooks")
    if hooks is None:
        hooks = []
    if not isinstance(hooks, list) or not all(isinstance(h, dict) for h in hooks):
        raise ApiError(400, "BadRequest", "MutatingWebhookConfiguration in version \"v1\" cannot "
                       "be handled as a MutatingWebhookConfiguration: webhooks must be a list of "
                       "objects")
    errors, seen = [], set()
    for i, hook in enumerate(hooks):
        _default_webhook(hook)
        errors += _validate_webhook(hook, "webhooks[%d]" % i, seen)
    if errors:
        raise invalid("MutatingWebhookConfiguration", "admissionregistration.k8s.io",
                      _name(obj), errors)


# --- v1 Secret ---------------------------------------------------------------------------
def _secret(store, obj, old):
    """stringData is write-only: merged into data (base64) on every write, never stored."""
    data = obj.get("data")
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ApiError(400, "BadRequest", "Secret in version \"v1\" cannot be handled as a "
                       "Secret: data must be an object")
    for key, value in data.items():
        try:
            base64.b64decode(value, validate=True)
        except (binascii.Error, ValueError, TypeError) as e:
            raise ApiError(400, "BadRequest", "Secret in version \"v1\" cannot be handled as a "
                           "Secret: illegal base64 data in data.%s: %s" % (key, e))
    string_data = obj.pop("stringData", None) or {}
    for key, value in string_data.items():
        data[key] = base64.b64encode(str(value).encode()).decode()
    if data:
        obj["data"] = data
    obj["type"] = obj.get("type") or "Opaque"
    if old is not None and old.get("type") != obj["type"]:
        raise invalid("Secret", "", _name(obj), [("type", "Invalid", obj["type"],
                                                  "field is immutable")])


# --- scheduling.k8s.io/v1 PriorityClass ----------------------------------------------------
def _priority_class(store, obj, old):
    name = _name(obj)
    value = obj.setdefault("value", 0)
    if not isinstance(value, int) or isinstance(value, bool) or not -2**31 <= value < 2**31:
        raise ApiError(400, "BadRequest", "PriorityClass in version \"v1\" cannot be handled as "
                       "a PriorityClass: value must be an int32")
    obj.setdefault("preemptionPolicy", "PreemptLowerPriority")
    errors = []
    if obj["preemptionPolicy"] not in ("Never", "PreemptLowerPriority"):
        errors.append(("preemptionPolicy", "NotSupported", obj["preemptionPolicy"],
                       ["Never", "PreemptLowerPriority"]))
    if name in SYSTEM_PRIORITY_CLASSES:
        if value != SYSTEM_PRIORITY_CLASSES[name]:
            errors.append(("metadata.name", "Invalid", name, "name %s is a system priority class"
                           " and must have value %d" % (name, SYSTEM_PRIORITY_CLASSES[name])))
    elif name.startswith("system-"):
        errors.append(("metadata.name", "Forbidden", None, "priority class names with 'system-' "
                       "prefix are reserved for system use only"))
    elif value > HIGHEST_USER_DEFINABLE_PRIORITY:
        errors.append(("value", "Forbidden", None, "maximum allowed value of a user defined "
                       "priority is %d" % HIGHEST_USER_DEFINABLE_PRIORITY))
    if old is not None:
        for field in ("value", "preemptionPolicy"):
            if old.get(field) != obj.get(field):
                errors.append((field, "Invalid", obj.get(field), "field is immutable"))
    if errors:
        raise invalid("PriorityClass", "scheduling.k8s.io", name, errors)
    if obj.get("globalDefault") is True:
        # The Priority admission plugin: at most one global default.
        _, others = store.snapshot("priorityclasses", None, lambda o: o.get("globalDefault") is True
                                   and o["metadata"]["name"] != name)
        if others:
            raise ApiError(403, "Forbidden", 'priorityclasses.scheduling.k8s.io "%s" is forbidden:'
                           " PriorityClass %s is already marked as default. Only one default can"
                           " exist" % (name, others[0]["metadata"]["name"]),
                           {"name": name, "group": "scheduling.k8s.io", "kind": "priorityclasses"})


WRITERS = {
    ("admissionregistration.k8s.io", "mutatingwebhookconfigurations"):
        _mutating_webhook_configuration,
    ("", "secrets"): _secret,
    ("scheduling.k8s.io", "priorityclasses"): _priority_class,
}


def prepare(store, group, resource, obj, old=None):
    """Applies the resource's write rules to obj in place; old is the stored object on
    updates, None on creates. Raises ApiError as the API server would answer."""
    writer = WRITERS.get((group, resource))
    if writer is not None:
        writer(store, obj, old)
    return obj
