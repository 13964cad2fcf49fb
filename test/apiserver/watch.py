"""Watch streams: chunked HTTP, one JSON event per line, replayed from the store's history."""

import bisect
import itertools
import json
import socket
import time

import statuses
from store import ApiError

matcher = None  # set by apiserver.py (selector parsing lives there)


def _status_410(message, reason="Expired"):
    """A too-old resourceVersion as the watch cache answers it (apiserver/pkg/storage/cacher/
    watch_cache.go, getAllEventsSinceLocked): Expired, or Gone from 1.17 and earlier."""
    return (statuses.gone if reason == "Gone" else statuses.resource_expired)(message)


def _event_type(kind, old, new, match):
    """How a change looks through a selector: objects entering it are ADDED, leaving it DELETED."""
    was, now = match(old) if old else False, match(new)
    if kind == "DELETED":
        return "DELETED" if was else None
    if was and now:
        return "MODIFIED"
    if now:
        return "ADDED"
    if was:
        return "DELETED"
    return None


class Stream:
    def __init__(self, handler):
        self.h = handler

    def begin(self):
        self.h.send_response(200)
        self.h.send_header("Content-Type", "application/json")
        self.h.send_header("Transfer-Encoding", "chunked")
        self.h.end_headers()

    def chunk(self, data):
        self.h.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.h.wfile.flush()

    def event(self, kind, obj):
        self.chunk(json.dumps({"type": kind, "object": obj}).encode() + b"\n")

    def end(self):
        self.h.wfile.write(b"0\r\n\r\n")
        self.h.wfile.flush()

    def abort(self):
        """Breaks the connection mid-stream, without the terminating chunk."""
        self.h.close_connection = True
        try:
            self.h.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass


def serve(h, r, query):
    store, faults = h.server.store, h.server.faults
    match = matcher(r, query)
    bookmarks = query.get("allowWatchBookmarks") in ("1", "t", "T", "true", "TRUE", "True")
    timeout = float(query.get("timeoutSeconds") or 1800)
    rv_param = query.get("resourceVersion") or ""
    if rv_param not in ("", "0") and not rv_param.isdigit():
        raise ApiError(400, "BadRequest", "invalid resource version: %s" % rv_param)
    if faults.take("expire_watches"):
        message = "too old resource version: %s (%d)" % (rv_param or "0", store.rv)
        expired = _status_410(message, faults.expire_reason)
        if faults.expire_mode == "http":
            raise expired
        s = Stream(h)
        s.begin()
        s.event("ERROR", expired.status())
        return s.end()
    with store.cond:
        if rv_param in ("", "0"):
            # No resourceVersion: the current state as synthetic ADDED events, then changes.
            last = store.rv
            initial = [o for _, o in sorted(store.objects.get(r.resource, {}).items()) if match(o)]
        else:
            last = int(rv_param)
            if last < store.compacted_rv:
                initial = None
            else:
                initial = []
        generation = store.drop_generation
    s = Stream(h)
    s.begin()
    if initial is None:
        s.event("ERROR", _status_410("too old resource version: %d (%d)"
                                     % (last, store.compacted_rv + 1)).status())
        return s.end()
    faults.watch_opened(1)
    try:
        for o in initial:
            s.event("ADDED", o)
        _loop(h, r, s, store, faults, match, last, generation, bookmarks, timeout)
    except (BrokenPipeError, ConnectionResetError):
        pass
    finally:
        faults.watch_opened(-1)


def _loop(h, r, s, store, faults, match, last, generation, bookmarks, timeout):
    deadline = time.monotonic() + timeout
    interval = h.server.bookmark_interval
    next_bookmark = time.monotonic() + interval
    while True:
        with store.cond:
            while True:
                now = time.monotonic()
                if store.drop_generation != generation:
                    return s.abort()
                if now >= deadline:
                    return s.end()
                if not faults.silence and (store.rv > last or (bookmarks and now >= next_bookmark)):
                    break
                wake = min(deadline, next_bookmark if bookmarks else deadline)
                store.cond.wait(max(0.01, min(wake - now, 0.5)))
            if last < store.compacted_rv:
                expired = True
                events = []
            else:
                expired = False
                events = []
                # The history is in resourceVersion order: start after `last` rather than
                # walk it all. Every watch wakes on every change (one condition for the
                # store), so a whole walk made each write cost watches x history.
                start = bisect.bisect_right(store.history, last, key=lambda e: e[0])
                for rv, resource, kind, old, new in itertools.islice(store.history, start, None):
                    if resource != r.resource:
                        continue
                    shown = _event_type(kind, old, new, match)
                    if shown:
                        events.append((shown, new))
                last = store.rv
        if expired:
            s.event("ERROR", _status_410("too old resource version: %d (%d)"
                                         % (last, store.compacted_rv + 1)).status())
            return s.end()
        fault = faults.take_watch_fault() if events else None
        if fault == "garbage":
            s.chunk(b'{"type":"MODIFIED","object":{"metadata":' + b"}}garbage\n")
        elif fault == "truncate":
            line = json.dumps({"type": events[0][0], "object": events[0][1]}).encode()
            s.chunk(line[:len(line) // 2])
            return s.abort()
        for kind, obj in events:
            s.event(kind, obj)
        if bookmarks and time.monotonic() >= next_bookmark:
            s.event("BOOKMARK", {"kind": r.kind, "apiVersion": r.api_version,
                                 "metadata": {"resourceVersion": str(last),
                                              "creationTimestamp": None}})
            next_bookmark = time.monotonic() + interval
