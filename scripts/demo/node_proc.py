"""A proc root for gleaner-agent on a scratch node smaller than the machine (--proc-root).

The agent takes the node's used memory from <proc root>/meminfo (MemTotal - MemAvailable,
agent/metrics/node_sampler.cc) and judges it against the memory capacity its Node lists
(agent/qos/evict.cc). On a scratch node that memory is what its pods use: the meminfo here
says MemTotal = the node's size and MemAvailable = the size less `used_bytes()` (the scratch
kubepods tree's working set), so the machine's other work neither makes nor hides memory
pressure on it. The other files the agent reads are the machine's own (symlinks)."""
import os
import threading
import time

PROC_FILES = ("stat", "cpuinfo", "pressure", "sys", "loadavg", "uptime")
WRITE_INTERVAL_S = 0.1


class NodeProc:
    """meminfo is rewritten in place (same length, one write) every 100 ms: the agent keeps
    it open and reads it again each pass. `written` holds (monotonic time, used bytes) of
    each write, so a caller can say what the agent could read at a given moment."""

    def __init__(self, root, node_mib, used_bytes):
        self.root, self.total, self.used_bytes = root, node_mib << 20, used_bytes
        self.written = []
        self.lock = threading.Lock()
        self.stop_flag = threading.Event()
        self.thread = None

    def start(self):
        os.makedirs(self.root, exist_ok=True)
        for name in PROC_FILES:
            link = os.path.join(self.root, name)
            if not os.path.lexists(link) and os.path.exists("/proc/" + name):
                os.symlink("/proc/" + name, link)
        self.write()
        self.thread = threading.Thread(target=self.loop, daemon=True)
        self.thread.start()

    def write(self):
        used = min(self.total, max(0, self.used_bytes()))
        text = "MemTotal:       %12d kB\nMemAvailable:   %12d kB\n" % (
            self.total >> 10, (self.total - used) >> 10)
        fd = os.open(os.path.join(self.root, "meminfo"), os.O_WRONLY | os.O_CREAT, 0o644)
        try:
            os.pwrite(fd, text.encode(), 0)
        finally:
            os.close(fd)
        with self.lock:
            self.written.append((time.monotonic(), used))
            del self.written[:-3000]  # the last 5 minutes

    def between(self, start, end, threshold_bytes):
        """(the most used bytes written from `start` to `end` (monotonic), the time of the
        first at or over `threshold_bytes` or None)."""
        with self.lock:
            seen = [w for w in self.written if start <= w[0] <= end]
        peak = max((used for _, used in seen), default=0)
        return peak, next((t for t, used in seen if used >= threshold_bytes), None)

    def loop(self):
        while not self.stop_flag.wait(WRITE_INTERVAL_S):
            self.write()

    def stop(self):
        self.stop_flag.set()
        if self.thread:
            self.thread.join()
