"""A scratch cgroup hierarchy on the real cgroup filesystem for Python tests, made the way
test/support/scratch_cgroup.h makes it for the C++ ones: one directory under this
process's own cgroup in each controller (named gleaner-test-<pid>-<n>, so either sweeper
removes it once its process is dead), reached through a directory of symlinks that looks
like /sys/fs/cgroup. Removing it kills whatever still runs inside."""

import itertools
import os
import shutil
import tempfile

from podcgroups import remove_dir

CGROUP_ROOT = "/sys/fs/cgroup"
PREFIX = "gleaner-test-"
CONTROLLERS = ("cpu", "cpuacct", "cpuset", "memory")
_counter = itertools.count()


def skip_reason():
    """Empty when real cgroups can be made here; otherwise why not."""
    if os.geteuid() != 0:
        return "needs root to create cgroups (run the suite as root)"
    if os.path.exists(os.path.join(CGROUP_ROOT, "cgroup.controllers")):
        return ""
    missing = [c for c in CONTROLLERS if not os.path.isdir(os.path.join(CGROUP_ROOT, c))]
    return "cgroup v1 controllers not mounted: %s" % ", ".join(missing) if missing else ""


def own_path(controller):
    """This process's cgroup in `controller` ("" for v2) from /proc/self/cgroup."""
    with open("/proc/self/cgroup") as f:
        for line in f:
            _, names, path = line.rstrip("\n").split(":", 2)
            if (controller and controller in names.split(",")) or (not controller and not names):
                return path
    return "/"


def alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    return True


class ScratchCgroups:
    def __init__(self):
        self.name = "%s%d-%d" % (PREFIX, os.getpid(), next(_counter))
        # Named by its owner, so a later scratch tree (here or in C++) removes it if the
        # owner dies without remove(): test/support/scratch_cgroup.cc.
        self.links = tempfile.mkdtemp(prefix="gleaner-cgroot-%d-" % os.getpid())
        self.v2 = os.path.exists(os.path.join(CGROUP_ROOT, "cgroup.controllers"))
        self.bases = []
        try:
            self._make()
        except BaseException:
            self.remove()
            raise
        self.root = os.path.join(self.links, "v2") if self.v2 else self.links

    def _make(self):
        for controller in [""] if self.v2 else CONTROLLERS:
            parent = os.path.join(CGROUP_ROOT, controller, own_path(controller).lstrip("/"))
            base = os.path.join(parent, self.name)
            link = os.path.join(self.links, controller or "v2")
            if any(os.path.realpath(b) == os.path.realpath(base) for b in self.bases):
                os.symlink(base, link)  # cpu,cpuacct co-mounted: one hierarchy, two names
                continue
            sweep_stale(parent)
            os.mkdir(base)
            self.bases.append(base)
            if controller == "cpuset":
                for name in ("cpuset.cpus", "cpuset.mems"):
                    with open(os.path.join(parent, name)) as f, \
                            open(os.path.join(base, name), "w") as out:
                        out.write(f.read().strip())
            if not controller:
                with open(os.path.join(base, "cgroup.subtree_control"), "w") as f:
                    f.write("+cpu +memory")
            os.symlink(base, link)

    def remove(self):
        for base in self.bases:
            remove_dir(base)
        self.bases = []
        shutil.rmtree(self.links, ignore_errors=True)

    def exists(self):
        return any(os.path.isdir(b) for b in self.bases)


def sweep_stale(parent):
    """Hierarchies of test processes that died before removing theirs."""
    for name in os.listdir(parent):
        if not name.startswith(PREFIX):
            continue
        try:
            owner = int(name[len(PREFIX):].split("-")[0])
        except ValueError:
            continue
        if owner > 0 and not alive(owner):
            remove_dir(os.path.join(parent, name))
