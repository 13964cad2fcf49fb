"""Test controls: faults the next requests or watches should meet, set through /_admin/."""

import threading


class Faults:
    def __init__(self, token=None):
        self.lock = threading.Lock()
        self.release = threading.Event()  # set by reset: wakes every stalled request
        self.token = token
        self.requests = []
        self.watchers = 0
        self.clear()

    def clear(self):
        self.expire_watches = 0
        self.expire_mode = "event"
        self.expire_reason = "Expired"  # or "Gone", as kube-apiserver 1.17 and earlier
        self.eviction_429 = 0
        self.stall_count, self.stall_seconds, self.stall_prefix = 0, 0.0, "/"
        self.stall_method = ""  # "" stalls any method
        self.watch_fault = None
        self.silence = False
        self.kubelet_mode = "ok"
        # throttle: the next `throttle` requests are refused as kube-apiserver's max-in-flight
        # and priority-and-fairness filters refuse them (429, Retry-After in seconds).
        self.throttle, self.throttle_retry_after = 0, "1"
        # fail: the next `fail_count` requests with this method and path prefix answer
        # `fail_code` as kube-apiserver words that code (statuses.injected); fail_reason
        # picks one of a code's reasons, fail_retry_after the seconds of wait it names.
        self.fail_count, self.fail_method, self.fail_prefix, self.fail_code = 0, "", "/", 500
        self.fail_reason, self.fail_retry_after = "", 0
        # token_node_info off: ServiceAccount tokens and their reviews as before Kubernetes
        # 1.30, without the pod's node (tokens.py).
        self.token_node_info = True

    def release_stalled(self):
        """Wakes every stalled request, leaving the other faults armed."""
        with self.lock:
            self.release.set()
            self.release = threading.Event()

    def reset(self):
        with self.lock:
            self.clear()
            self.requests = []
            self.release.set()
            self.release = threading.Event()

    def take(self, name):
        """Consumes one unit of a counted fault; -1 means 'until reset'."""
        with self.lock:
            value = getattr(self, name)
            if value == 0:
                return False
            if value > 0:
                setattr(self, name, value - 1)
            return True

    def take_stall(self, method, path):
        with self.lock:
            if self.stall_count == 0 or not path.startswith(self.stall_prefix) or \
                    self.stall_method not in ("", method):
                return None
            if self.stall_count > 0:
                self.stall_count -= 1
            return self.stall_seconds, self.release

    def take_fail(self, method, path):
        with self.lock:
            if self.fail_count == 0 or self.fail_method not in ("*", method) or \
                    not path.startswith(self.fail_prefix):
                return None
            if self.fail_count > 0:
                self.fail_count -= 1
            return self.fail_code, self.fail_reason, self.fail_retry_after

    def take_watch_fault(self):
        with self.lock:
            fault, self.watch_fault = self.watch_fault, None
            return fault

    def log(self, entry):
        with self.lock:
            self.requests.append(entry)

    def answered(self, entry, code):
        with self.lock:
            entry["code"] = code

    def watch_opened(self, delta):
        with self.lock:
            self.watchers += delta
