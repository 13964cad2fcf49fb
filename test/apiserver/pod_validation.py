"""The part of pod validation that admission's output must pass: each container's resource
requirements, checked after the mutating webhooks as the API server checks them (a webhook
that writes an invalid pod makes the create fail with 422).

Modelled on kubernetes pkg/apis/core/validation/validation.go (ValidateResourceRequirements)
and pkg/apis/core/helper/helpers.go (IsNativeResource, IsOvercommitAllowed):
- every request must be at most its limit;
- overcommit (request below limit) is allowed for native resources, those without a domain
  or with a kubernetes.io/ domain (cpu, memory, and so kubernetes.io/batch-cpu and
  kubernetes.io/batch-memory), hugepages excepted; any other extended resource
  (nvidia.com/gpu) must have its request equal to its limit, and a request without a limit
  is refused."""

import re
from fractions import Fraction

from resources import invalid

_SUFFIX = {"Ki": 2 ** 10, "Mi": 2 ** 20, "Gi": 2 ** 30, "Ti": 2 ** 40, "Pi": 2 ** 50,
           "Ei": 2 ** 60, "n": Fraction(1, 10 ** 9), "u": Fraction(1, 10 ** 6),
           "m": Fraction(1, 1000), "": 1, "k": 10 ** 3, "M": 10 ** 6, "G": 10 ** 9,
           "T": 10 ** 12, "P": 10 ** 15, "E": 10 ** 18}
_QUANTITY = re.compile(r"^([+-]?[0-9]*\.?[0-9]+)(([eE][+-]?[0-9]+)|[KMGTPE]i|[numkMGTPE]|)$")


def parse_quantity(text):
    """A resource.Quantity as an exact Fraction, or None when it is not one."""
    if isinstance(text, bool):
        return None
    if isinstance(text, (int, float)):
        return Fraction(text)
    m = _QUANTITY.match(str(text).strip())
    if not m:
        return None
    number = Fraction(m.group(1))
    if m.group(3):
        return number * Fraction(10) ** int(m.group(3)[1:])
    return number * _SUFFIX[m.group(2)]


def overcommit_allowed(name):
    """helper.IsOvercommitAllowed: a native resource that is not hugepages."""
    native = "/" not in name or "kubernetes.io/" in name
    return native and not name.startswith("hugepages-")


def _container_errors(container, path):
    res = container.get("resources") if isinstance(container, dict) else None
    if not isinstance(res, dict):
        return []
    requests = res.get("requests") if isinstance(res.get("requests"), dict) else {}
    limits = res.get("limits") if isinstance(res.get("limits"), dict) else {}
    errors = []
    for name, value in sorted(requests.items()):
        where = "%s.resources.requests[%s]" % (path, name)
        quantity = parse_quantity(value)
        if quantity is None:
            continue  # decoding is not modelled: tests send malformed quantities on purpose
        if name not in limits:
            if not overcommit_allowed(name):
                errors.append(("%s.resources.limits[%s]" % (path, name), "Required", None,
                               "Limit must be set for non overcommitable resources"))
            continue
        limit = parse_quantity(limits[name])
        if limit is None:
            continue
        if quantity != limit and not overcommit_allowed(name):
            errors.append((where, "Invalid", str(value), "must be equal to %s limit of %s"
                           % (name, limits[name])))
        elif quantity > limit:
            errors.append((where, "Invalid", str(value), "must be less than or equal to %s "
                           "limit of %s" % (name, limits[name])))
    return errors


def validate_pod_resources(pod):
    """Raises the API server's 422 Invalid when a container's resources break the rules."""
    spec = pod.get("spec") if isinstance(pod.get("spec"), dict) else {}
    errors = []
    for field in ("initContainers", "containers"):
        for i, c in enumerate(spec.get(field) or []):
            errors += _container_errors(c, "spec.%s[%d]" % (field, i))
    if errors:
        meta = pod.get("metadata") or {}
        raise invalid("Pod", "", meta.get("name") or meta.get("generateName") or "", errors)
