"""Test controls under /_admin/ (no bearer token needed, not logged as API requests).

GET:  requests (the API requests logged, with their status codes and bearer tokens),
      watchers (open watch streams), webhook-calls (the admission webhook calls made), state
      (the store's resourceVersion and compacted resourceVersion).
POST: webhook-service?namespace=&name=&port=&address= (where a webhook's service reference
      leads), expire-next-watch?count=&mode=event|http&reason=Expired|Gone, eviction-429?count=,
      throttle?count=&retry-after= (429 as priority and fairness answers),
      stall?count=&seconds=&prefix=&method=, watch-fault?kind=garbage|truncate,
      silence-watches?on=,
      kubelet?mode=ok|fail|garbage|empty, fail?count=&method=&prefix=&code=&reason=&retry-after=
      (the code answered as kube-apiserver words it: statuses.injected), token?value=,
      token-node-info?on=true|false (ServiceAccount tokens with or without the pod's node,
      as from 1.30 or before), compact, drop-watches, release (wakes stalled requests),
      reset (every fault back to its default, logs cleared, watches dropped).
A count of -1 means "until reset"."""


def handle(h, method, what, q):
    """Answers /_admin/<what> on the request handler h."""
    f, store = h.server.faults, h.server.store
    count = int(q.get("count", "1"))
    if what == "requests" and method == "GET":
        with f.lock:
            return h.send_json(200, list(f.requests))
    if what == "watchers" and method == "GET":
        return h.send_json(200, {"watchers": f.watchers})
    if what == "webhook-calls" and method == "GET":
        return h.send_json(200, h.server.admission.report())
    if what == "webhook-service" and method == "POST":
        if not q.get("namespace") or not q.get("name"):
            return h.send_status(400, "namespace and name are required", "BadRequest")
        h.server.admission.map_service(q["namespace"], q["name"],
                                       int(q.get("port") or 443), q.get("address", ""))
        return h.send_status(200)
    if what == "state" and method == "GET":
        return h.send_json(200, {"resourceVersion": str(store.rv),
                                 "compactedResourceVersion": str(store.compacted_rv)})
    with f.lock:
        if what == "expire-next-watch":
            f.expire_watches, f.expire_mode = count, q.get("mode", "event")
            f.expire_reason = q.get("reason", "Expired")
        elif what == "eviction-429":
            f.eviction_429 = count
        elif what == "throttle":
            f.throttle, f.throttle_retry_after = count, q.get("retry-after", "1")
        elif what == "stall":
            f.stall_count, f.stall_seconds = count, float(q.get("seconds", "30"))
            f.stall_prefix, f.stall_method = q.get("prefix", "/"), q.get("method", "")
        elif what == "watch-fault":
            f.watch_fault = q.get("kind", "garbage")
        elif what == "silence-watches":
            f.silence = q.get("on", "true") == "true"
        elif what == "kubelet":
            f.kubelet_mode = q.get("mode", "ok")
        elif what == "fail":
            f.fail_count, f.fail_method = count, q.get("method", "POST")  # "*": any
            f.fail_prefix, f.fail_code = q.get("prefix", "/"), int(q.get("code", "500"))
            f.fail_reason, f.fail_retry_after = q.get("reason", ""), int(q.get("retry-after", "0"))
        elif what == "token":
            f.token = q.get("value") or None
        elif what == "token-node-info":
            f.token_node_info = q.get("on", "true") == "true"
        elif what not in ("compact", "drop-watches", "reset", "release"):
            return h.send_status(404, "unknown admin endpoint " + what, "NotFound")
    if what == "compact":
        store.compact()
    elif what == "drop-watches":
        store.drop_watches()
    elif what == "release":
        f.release_stalled()
    elif what == "reset":
        f.reset()
        store.drop_watches()
        h.server.admission.clear_calls()
    h.send_status(200)
