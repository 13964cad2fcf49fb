#!/usr/bin/python3
"""The module table of docs/architecture.md, enforced: every `#include "dir/..."` in the
project's sources (common/, net/, cgroup/, resctrl/, kube/, reporter/, agent/, scheduler/) must be
an edge the table allows. A module is a top-level folder, or for reporter/, agent/ and
scheduler/ a folder below it (agent/qos, scheduler/core...). Includes inside a module are
always allowed; generated headers (no folder) are not checked.

Usage: include_edges.py --source-dir SRC     exit 1 and one line per forbidden include
       include_edges.py --self-test           the checker finds a planted forbidden include"""

import argparse
import os
import re
import sys
import tempfile

AGENT_CORE = {"agent/states", "agent/config", "agent/snapshot", "agent/batch", "agent/qos",
              "agent/step", "agent/bpf", "agent/metrics"}
REPORTER = {"reporter/wire", "reporter/client", "reporter/metrics"}
SCHEDULER = {"scheduler/core", "scheduler/sim", "scheduler/admission", "scheduler/server",
             "scheduler/kube", "scheduler/estimator", "scheduler/fleet"}

# module -> the modules it may include. Keep docs/architecture.md's table in step.
ALLOWED = {
    "common": set(),
    # HTTP: URLs, bearer tokens, the listener and replies of both binaries' servers.
    "net": {"common"},
    "cgroup": {"common"},
    "resctrl": {"common"},
    "kube": {"common", "net"},
    "reporter/wire": {"common"},
    "reporter/client": {"common", "net", "reporter/wire"},
    "reporter/metrics": {"common", "net", "reporter/wire"},
    "agent/states": {"common", "kube", "cgroup"},  # cgroup::KubeQos
    "agent/config": {"common", "kube"},
    "agent/snapshot": {"common", "kube", "agent/states"},
    "agent/batch": {"common", "kube", "agent/states", "agent/config", "agent/snapshot"},
    "agent/bpf": {"common", "cgroup"},
    "agent/metrics": {"common", "cgroup"},
    "agent/qos": {"common", "kube", "cgroup", "resctrl", "agent/states", "agent/config",
                  "agent/snapshot", "agent/batch"},
    "agent/step": {"common", "kube", "cgroup", "resctrl"} | (AGENT_CORE - {"agent/step"}),
    "agent/daemon": {"common", "net", "kube", "cgroup", "resctrl"} | AGENT_CORE | REPORTER,
    "agent/cli": {"common", "net", "kube", "cgroup", "resctrl", "agent/daemon"} | AGENT_CORE
                 | REPORTER,
    "agent": {"common", "agent/cli"},  # agent/main.cc
    # The pure core: decisions only, no Kubernetes, no I/O modules.
    "scheduler/core": {"common"},
    "scheduler/sim": {"common", "scheduler/core"},
    "scheduler/admission": {"common", "kube"},
    "scheduler/server": {"common", "net", "kube", "reporter/wire", "scheduler/core",
                         "scheduler/admission"},
    "scheduler/kube": {"common", "net", "kube", "scheduler/core", "scheduler/admission",
                       "scheduler/server", "scheduler/fleet"},
    "scheduler/estimator": {"common", "kube", "scheduler/core", "scheduler/kube",
                            "scheduler/server"},
    # Fleet mode's pure pieces (PropagationPolicy matching): Kubernetes vocabulary only.
    "scheduler/fleet": {"common", "kube", "scheduler/core"},
    "scheduler/cli": {"common", "net", "kube"} | SCHEDULER,
    "scheduler": {"common", "scheduler/cli"},  # scheduler/main.cc
}
TOP = ("common", "net", "cgroup", "resctrl", "kube", "reporter", "agent", "scheduler")
SPLIT = ("reporter", "agent", "scheduler")
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


def module_of(path):
    """The module of a path relative to the source root ("agent/qos/x.h" -> "agent/qos")."""
    parts = path.split("/")
    if parts[0] not in TOP:
        return None
    if parts[0] in SPLIT and len(parts) > 2:
        return parts[0] + "/" + parts[1]
    return parts[0]


def violations(src):
    out = []
    for top in TOP:
        for root, _, files in os.walk(os.path.join(src, top)):
            for name in sorted(files):
                if not name.endswith((".cc", ".h", ".c")):
                    continue
                path = os.path.relpath(os.path.join(root, name), src)
                here = module_of(path)
                if here not in ALLOWED:
                    out.append("%s: module %s is not in the table" % (path, here))
                    continue
                with open(os.path.join(src, path), errors="replace") as f:
                    for n, line in enumerate(f, 1):
                        m = INCLUDE.match(line)
                        if not m or "/" not in m.group(1):
                            continue
                        there = module_of(m.group(1))
                        if there is None or there == here or there in ALLOWED[here]:
                            continue
                        out.append("%s:%d: %s may not include %s (%s)"
                                   % (path, n, here, there, m.group(1)))
    return out


def self_test():
    with tempfile.TemporaryDirectory(prefix="gleaner-layering-") as tmp:
        def put(path, text):
            os.makedirs(os.path.dirname(os.path.join(tmp, path)), exist_ok=True)
            with open(os.path.join(tmp, path), "w") as f:
                f.write(text)
        put("common/result.h", "#pragma once\n")
        put("kube/objects.h", '#include "common/result.h"\n')
        put("scheduler/core/ok.cc", '#include "scheduler/core/ok.h"\n#include "common/result.h"\n')
        if violations(tmp):
            print("FAIL: allowed includes reported: %s" % violations(tmp))
            return 1
        put("scheduler/core/bad.cc", '#include "kube/objects.h"\n')
        found = violations(tmp)
        if len(found) != 1 or "scheduler/core may not include kube" not in found[0]:
            print("FAIL: the planted include scheduler/core -> kube was not reported: %s" % found)
            return 1
        print("self-test: the planted include is reported: " + found[0])
    return 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--source-dir")
    ap.add_argument("--self-test", action="store_true")
    o = ap.parse_args()
    if o.self_test:
        return self_test()
    found = violations(o.source_dir)
    for v in found:
        print("FAIL: " + v)
    print("%d forbidden includes" % len(found))
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
