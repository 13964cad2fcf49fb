"""A scratch kubepods hierarchy on this machine's real cgroup filesystem, for the live demo.

Like test/support/scratch_cgroup.cc: the tree is made under this process's own cgroup in
each controller (so whatever accounts for the caller still covers the demo), and exposed
through a directory of symlinks shaped like a cgroup root (<root>/cpu, <root>/memory, ...
on v1 and hybrid machines, one directory on v2). The agent then sees the usual relative
paths (kubepods/besteffort/pod<uid>).

Everything the demo makes is recorded in <run dir>/state.json as it is made, so
`live.py --cleanup <run dir>` (the shell's EXIT/INT/TERM trap) can remove it even when the
demo itself was killed.
"""
import ctypes
import json
import os
import shutil
import signal
import time

CGROUP_ROOT = "/sys/fs/cgroup"
V1_CONTROLLERS = ["cpu", "cpuacct", "cpuset", "memory"]
PREFIX = "gleaner-demo-"
PR_SET_PDEATHSIG = 1


def detect_version():
    """'v2', 'v1' (v1 controllers, with or without a unified mount) or an error string."""
    if os.path.exists(os.path.join(CGROUP_ROOT, "cgroup.controllers")):
        return "v2", ""
    missing = [c for c in V1_CONTROLLERS if not os.path.isdir(os.path.join(CGROUP_ROOT, c))]
    if missing:
        return None, "cgroup v1 controller(s) %s not mounted under %s" % (
            ", ".join(missing), CGROUP_ROOT)
    return "v1", ""


def own_path(controller):
    """This process's cgroup in `controller` ('' for the v2 line), from /proc/self/cgroup."""
    with open("/proc/self/cgroup") as f:
        for line in f:
            _, controllers, path = line.rstrip("\n").split(":", 2)
            names = controllers.split(",") if controllers else []
            if controller in names or (controller == "" and controllers == ""):
                return path
    return "/"


def write(path, value):
    with open(path, "w") as f:
        f.write(value)


def read(path):
    with open(path) as f:
        return f.read().strip()


def pid_alive(pid):
    try:
        os.kill(pid, 0)
        return True
    except ProcessLookupError:
        return False
    except PermissionError:
        return True


def remove_tree(base):
    """rmdir bottom-up (cgroupfs removes only empty directories)."""
    if not os.path.isdir(base):
        return
    for dirpath, _, _ in sorted(os.walk(base), key=lambda t: -len(t[0])):
        try:
            os.rmdir(dirpath)
        except OSError:
            pass


def tree_pids(base):
    pids = set()
    for dirpath, _, files in os.walk(base):
        if "cgroup.procs" in files:
            try:
                pids.update(int(p) for p in read(os.path.join(dirpath, "cgroup.procs")).split())
            except (OSError, ValueError):
                pass
    return pids


def kill_tree(base, deadline_s=5.0):
    """SIGKILLs every process in the tree until it is empty (or the deadline passes)."""
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        pids = tree_pids(base)
        if not pids:
            return True
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        time.sleep(0.05)
    return not tree_pids(base)


class Scratch:
    def __init__(self, run_dir):
        self.run_dir = run_dir
        self.version, self.error = detect_version()
        self.name = PREFIX + str(os.getpid())
        self.bases = []  # real directories: one per distinct hierarchy
        self.link_dir = os.path.join(run_dir, "cgroot")
        self.root = self.link_dir  # what the agent gets as --cgroup-root
        self.pids = []
        self.others = []  # other scratch hierarchies of the run: {"bases", "links"}

    # --- state for the shell's trap -------------------------------------------------
    def save_state(self):
        state = {"bases": self.bases, "link_dir": self.link_dir, "pids": self.pids,
                 "others": self.others}
        tmp = os.path.join(self.run_dir, "state.json.tmp")
        write(tmp, json.dumps(state))
        os.replace(tmp, os.path.join(self.run_dir, "state.json"))

    def remember_pid(self, pid):
        self.pids.append(pid)
        self.save_state()

    def remember_scratch(self, other):
        """Another scratch hierarchy (test/spark/scratch_cgroups.ScratchCgroups: the fleet's
        real node), removed by the fallback too."""
        self.others.append({"bases": list(other.bases), "links": other.links})
        self.save_state()

    # --- building ---------------------------------------------------------------------
    def create(self):
        os.makedirs(self.link_dir)
        if self.version == "v2":
            parent = os.path.join(CGROUP_ROOT, own_path("").lstrip("/"))
            enabled = read(os.path.join(parent, "cgroup.subtree_control")).split()
            if not {"cpu", "memory"} <= set(enabled):
                try:
                    write(os.path.join(parent, "cgroup.subtree_control"), "+cpu +cpuset +memory")
                except OSError as e:
                    raise RuntimeError(
                        "cgroup v2: cannot enable cpu/memory below %s (%s); run the demo in a "
                        "delegated cgroup, e.g. systemd-run --scope -p Delegate=yes make demo"
                        % (parent, e.strerror))
            base = os.path.join(parent, self.name)
            self._sweep(parent)
            self.bases.append(base)
            self.save_state()
            os.mkdir(base)
            write(os.path.join(base, "cgroup.subtree_control"), "+cpu +cpuset +memory")
            os.symlink(base, os.path.join(self.link_dir, "v2"))
            self.root = os.path.join(self.link_dir, "v2")
            return
        made = {}
        for c in V1_CONTROLLERS:
            parent = os.path.join(CGROUP_ROOT, c, own_path(c).lstrip("/"))
            base = os.path.join(parent, self.name)
            canonical = os.path.realpath(base)
            if canonical not in made:  # cpu and cpuacct may be one hierarchy under two names
                self._sweep(parent)
                made[canonical] = base
                self.bases.append(base)
                self.save_state()
                os.mkdir(base)
                if c == "cpuset":
                    self._copy_cpuset(parent, base)
            os.symlink(made[canonical], os.path.join(self.link_dir, c))

    def _sweep(self, parent):
        """Removes trees of earlier demos whose process is gone."""
        try:
            names = os.listdir(parent)
        except OSError:
            return
        for n in names:
            if n.startswith(PREFIX) and n[len(PREFIX):].isdigit():
                if not pid_alive(int(n[len(PREFIX):])):
                    path = os.path.join(parent, n)
                    kill_tree(path)
                    remove_tree(path)

    @staticmethod
    def _copy_cpuset(parent, child):
        for f in ("cpuset.cpus", "cpuset.mems"):
            write(os.path.join(child, f), read(os.path.join(parent, f)))

    def mkdir(self, rel):
        for base in self.bases:
            path = base
            for part in rel.split("/"):
                parent, path = path, os.path.join(path, part)
                if os.path.isdir(path):
                    continue
                os.mkdir(path)
                if os.path.exists(os.path.join(path, "cpuset.cpus")) and self.version == "v1":
                    self._copy_cpuset(parent, path)
                if self.version == "v2":
                    write(os.path.join(path, "cgroup.subtree_control"), "+cpu +cpuset +memory")

    def rmdir(self, rel):
        for base in self.bases:
            path = os.path.join(base, rel)
            kill_tree(path)
            remove_tree(path)

    def preexec(self, rel):
        """A preexec_fn: die with the demo, and start inside `rel` in every hierarchy."""
        targets = [os.path.join(b, rel, "cgroup.procs") for b in self.bases]
        libc = ctypes.CDLL(None, use_errno=True)

        def enter():
            libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
            for t in targets:
                write(t, str(os.getpid()))
        return enter

    @staticmethod
    def preexec_no_cgroup():
        """A preexec_fn for processes outside the pods (agent, scheduler, wrk)."""
        libc = ctypes.CDLL(None, use_errno=True)
        return lambda: libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)

    # --- reading ----------------------------------------------------------------------
    def _file(self, controller, rel, name):
        return os.path.join(self.root, "" if self.version == "v2" else controller, rel, name)

    def cpu_seconds(self, rel):
        """CPU time used by everything in `rel`, in seconds."""
        try:
            if self.version == "v2":
                for line in read(self._file("", rel, "cpu.stat")).splitlines():
                    key, value = line.split()
                    if key == "usage_usec":
                        return int(value) / 1e6
                return 0.0
            return int(read(self._file("cpuacct", rel, "cpuacct.usage"))) / 1e9
        except OSError:
            return 0.0

    def cpu_quota_cores(self, rel):
        """The CFS limit of `rel` in cores, or None when unlimited."""
        try:
            if self.version == "v2":
                quota, period = read(self._file("", rel, "cpu.max")).split()
                return None if quota == "max" else int(quota) / int(period)
            quota = int(read(self._file("cpu", rel, "cpu.cfs_quota_us")))
            period = int(read(self._file("cpu", rel, "cpu.cfs_period_us")))
            return None if quota < 0 else quota / period
        except (OSError, ValueError):
            return None

    def memory_bytes(self, rel):
        try:
            name = "memory.current" if self.version == "v2" else "memory.usage_in_bytes"
            return int(read(self._file("memory", rel, name)))
        except (OSError, ValueError):
            return 0

    def memory_working_set(self, rel):
        """Usage less the inactive page cache (what kubelet calls the working set)."""
        key = "inactive_file" if self.version == "v2" else "total_inactive_file"
        inactive = self._keyed("memory", rel, "memory.stat", key)
        return max(0, self.memory_bytes(rel) - inactive)

    def set_memory_limit(self, rel, value):
        """Bytes, or None for no limit."""
        if self.version == "v2":
            write(self._file("", rel, "memory.max"), "max" if value is None else str(value))
        else:
            write(self._file("memory", rel, "memory.limit_in_bytes"),
                  "-1" if value is None else str(value))

    def oom_kills(self, rel):
        """Processes the kernel's OOM killer has killed for this cgroup's limit so far."""
        if self.version == "v2":
            return self._keyed("", rel, "memory.events", "oom_kill")
        return self._keyed("memory", rel, "memory.oom_control", "oom_kill")

    def _keyed(self, controller, rel, name, key):
        try:
            for line in read(self._file(controller, rel, name)).splitlines():
                parts = line.split()
                if len(parts) == 2 and parts[0] == key:
                    return int(parts[1])
        except (OSError, ValueError):
            pass
        return 0


def cleanup_run_dir(run_dir):
    """Removes what a demo recorded in <run_dir>/state.json: processes, cgroups, symlinks.
    Safe to run more than once, and after the demo cleaned up itself."""
    path = os.path.join(run_dir, "state.json")
    try:
        with open(path) as f:
            state = json.load(f)
    except (OSError, ValueError):
        return
    for pid in state.get("pids", []):
        try:  # only if the pid still belongs to this demo (pids are reused)
            with open("/proc/%d/cmdline" % pid, "rb") as f:
                if run_dir.encode() in f.read():
                    os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    for base in state.get("bases", []) + [b for o in state.get("others", []) for b in o["bases"]]:
        kill_tree(base)
        remove_tree(base)
    for other in state.get("others", []):
        shutil.rmtree(other["links"], ignore_errors=True)
    link_dir = state.get("link_dir")
    if link_dir and os.path.isdir(link_dir):
        for n in os.listdir(link_dir):
            os.unlink(os.path.join(link_dir, n))
        os.rmdir(link_dir)
    os.unlink(path)
