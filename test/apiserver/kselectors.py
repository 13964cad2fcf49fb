"""Label and field selectors with the syntax and errors of apimachinery's parsers."""

import re

_KEY = re.compile(r"^([A-Za-z0-9.\-]+/)?[A-Za-z0-9]([A-Za-z0-9_.\-]*[A-Za-z0-9])?$")
_VALUE = re.compile(r"^(([A-Za-z0-9]([A-Za-z0-9_.\-]*[A-Za-z0-9])?)?)$")


class SelectorError(ValueError):
    pass


def _split_terms(text):
    """Splits on commas that are not inside a parenthesised value set."""
    terms, depth, current = [], 0, ""
    for ch in text:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == "," and depth == 0:
            terms.append(current)
            current = ""
        else:
            current += ch
    terms.append(current)
    return [t.strip() for t in terms]


def _check_key(key, text):
    if not _KEY.match(key):
        raise SelectorError("unable to parse requirement: invalid label key %r in %r" % (key, text))


def _check_value(value, text):
    if len(value) > 63 or not _VALUE.match(value):
        raise SelectorError("unable to parse requirement: invalid label value %r in %r" % (value, text))


def parse_label_selector(text):
    """Returns a list of (key, op, values); op in exists, !exists, =, !=, in, notin."""
    reqs = []
    if text is None or text.strip() == "":
        return reqs
    for term in _split_terms(text):
        if term == "":
            raise SelectorError("found '', expected: identifier in %r" % text)
        m = re.match(r"^(\S+)\s+(in|notin)\s*\((.*)\)$", term)
        if m:
            key, op, values = m.group(1), m.group(2), [v.strip() for v in m.group(3).split(",")]
            _check_key(key, text)
            for v in values:
                _check_value(v, text)
            reqs.append((key, op, set(values)))
            continue
        m = re.match(r"^([^=!\s]+)\s*(==|=|!=)\s*(\S*)$", term)
        if m:
            key, op, value = m.group(1), m.group(2), m.group(3)
            _check_key(key, text)
            _check_value(value, text)
            reqs.append((key, "!=" if op == "!=" else "=", {value}))
            continue
        if term.startswith("!"):
            _check_key(term[1:], text)
            reqs.append((term[1:], "!exists", set()))
            continue
        _check_key(term, text)
        reqs.append((term, "exists", set()))
    return reqs


def labels_match(reqs, labels):
    labels = labels or {}
    for key, op, values in reqs:
        present = key in labels
        if op == "exists" and not present:
            return False
        if op == "!exists" and present:
            return False
        if op in ("=", "in") and (not present or labels[key] not in values):
            return False
        if op in ("!=", "notin") and present and labels[key] in values:
            return False
    return True


# Field labels each resource supports, as registered by kube-apiserver; anything else is a 400.
FIELD_LABELS = {
    "pods": {
        "metadata.name": lambda o: o["metadata"].get("name", ""),
        "metadata.namespace": lambda o: o["metadata"].get("namespace", ""),
        "spec.nodeName": lambda o: o.get("spec", {}).get("nodeName", ""),
        "spec.schedulerName": lambda o: o.get("spec", {}).get("schedulerName", ""),
        "spec.restartPolicy": lambda o: o.get("spec", {}).get("restartPolicy", ""),
        "spec.serviceAccountName": lambda o: o.get("spec", {}).get("serviceAccountName", ""),
        "status.phase": lambda o: o.get("status", {}).get("phase", ""),
        "status.podIP": lambda o: o.get("status", {}).get("podIP", ""),
        "status.nominatedNodeName": lambda o: o.get("status", {}).get("nominatedNodeName", ""),
    },
    "nodes": {
        "metadata.name": lambda o: o["metadata"].get("name", ""),
        "spec.unschedulable": lambda o: str(bool(o.get("spec", {}).get("unschedulable", False))).lower(),
    },
    "events": {
        "metadata.name": lambda o: o["metadata"].get("name", ""),
        "metadata.namespace": lambda o: o["metadata"].get("namespace", ""),
        "involvedObject.kind": lambda o: o.get("involvedObject", {}).get("kind", ""),
        "involvedObject.name": lambda o: o.get("involvedObject", {}).get("name", ""),
        "involvedObject.namespace": lambda o: o.get("involvedObject", {}).get("namespace", ""),
        "involvedObject.uid": lambda o: o.get("involvedObject", {}).get("uid", ""),
        "reason": lambda o: o.get("reason", ""),
        "type": lambda o: o.get("type", ""),
    },
    "namespaces": {
        "metadata.name": lambda o: o["metadata"].get("name", ""),
        "status.phase": lambda o: o.get("status", {}).get("phase", ""),
    },
    "secrets": {
        "metadata.name": lambda o: o["metadata"].get("name", ""),
        "metadata.namespace": lambda o: o["metadata"].get("namespace", ""),
        "type": lambda o: o.get("type", ""),
    },
}
_DEFAULT_FIELDS = {
    "metadata.name": lambda o: o["metadata"].get("name", ""),
    "metadata.namespace": lambda o: o["metadata"].get("namespace", ""),
}


def parse_field_selector(resource, text):
    """Returns a list of (getter, op, value); op in =, !=."""
    reqs = []
    if text is None or text.strip() == "":
        return reqs
    fields = FIELD_LABELS.get(resource, _DEFAULT_FIELDS)
    for term in text.split(","):
        m = re.match(r"^([^=!]+)(==|=|!=)(.*)$", term.strip())
        if not m:
            raise SelectorError("invalid selector: %r; can't understand %r" % (text, term))
        field, op, value = m.group(1), m.group(2), m.group(3)
        if field not in fields:
            raise SelectorError('field label not supported: %s' % field)
        reqs.append((fields[field], "!=" if op == "!=" else "=", value))
    return reqs


def fields_match(reqs, obj):
    for getter, op, value in reqs:
        actual = getter(obj)
        if (actual == value) != (op == "="):
            return False
    return True


# --- metav1.LabelSelector objects (webhook namespaceSelector/objectSelector) ------------
SELECTOR_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist")


def validate_label_selector(selector, path):
    """The field errors of apimachinery's ValidateLabelSelector: (field, type, value, detail)."""
    errors = []
    if selector is None:
        return errors
    if not isinstance(selector, dict):
        return [(path, "Invalid", selector, "must be an object")]
    for key, value in (selector.get("matchLabels") or {}).items():
        if not _KEY.match(key):
            errors.append((path + ".matchLabels", "Invalid", key, "invalid label key"))
        if not isinstance(value, str) or len(value) > 63 or not _VALUE.match(value):
            errors.append((path + ".matchLabels", "Invalid", value, "invalid label value"))
    for i, expr in enumerate(selector.get("matchExpressions") or []):
        where = "%s.matchExpressions[%d]" % (path, i)
        if not isinstance(expr, dict):
            errors.append((where, "Invalid", expr, "must be an object"))
            continue
        op, values = expr.get("operator"), expr.get("values") or []
        if op not in SELECTOR_OPERATORS:
            errors.append((where + ".operator", "Invalid", op,
                           "not a valid selector operator"))
        elif op in ("In", "NotIn") and not values:
            errors.append((where + ".values", "Required", None,
                           "must be specified when `operator` is 'In' or 'NotIn'"))
        elif op in ("Exists", "DoesNotExist") and values:
            errors.append((where + ".values", "Forbidden", None,
                           "may not be specified when `operator` is 'Exists' or 'DoesNotExist'"))
        if not isinstance(expr.get("key"), str) or not _KEY.match(expr.get("key")):
            errors.append((where + ".key", "Invalid", expr.get("key"), "invalid label key"))
    return errors


def label_selector_matches(selector, labels):
    """A metav1.LabelSelector against a label map; an empty or absent selector matches all."""
    labels = labels or {}
    selector = selector or {}
    for key, value in (selector.get("matchLabels") or {}).items():
        if labels.get(key) != value:
            return False
    for expr in selector.get("matchExpressions") or []:
        key, op, values = expr.get("key"), expr.get("operator"), expr.get("values") or []
        present = key in labels
        if op == "In" and not (present and labels[key] in values):
            return False
        if op == "NotIn" and present and labels[key] in values:
            return False
        if op == "Exists" and not present:
            return False
        if op == "DoesNotExist" and present:
            return False
        if op not in SELECTOR_OPERATORS:
            return False
    return True
