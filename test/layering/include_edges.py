#!/usr/bin/python3
"""The module table of docs/architecture.md, enforced. The table is the build's: every
`gleaner_module(NAME n [DIR d] LIBS ...)` call in the project's CMakeLists.txt files is a
module (the calling folder, or its subfolder d) whose allowed includes are the gleaner_*
targets among its LIBS; an executable's main.cc may include what its target links. Every
`#include "dir/..."` in the project's sources must cross an allowed edge. Includes inside a
module are always allowed; generated headers (no folder) are not checked.

Boost.Beast stays where HTTP is spoken: a header may include <boost/beast/...> itself, but no
header may include such a header (only .cc files may), so Beast is compiled only by the files
that use it, not by every file that includes a module's header.

The agent's decisions (the QoS strategies, agent/qos, and the step, agent/step) read and
write nothing on the node: every kernel value they use is in the pass's snapshot, read at
the edge (agent/edge), and their plans are applied by the executor. So they may not include a
header that does file I/O (IO_HEADERS), even from a module they may otherwise use.

Usage: include_edges.py --source-dir SRC     exit 1 and one line per forbidden include
       include_edges.py --self-test           the checker finds planted forbidden includes"""

import argparse
import os
import re
import sys
import tempfile

TOP = ("common", "net", "cgroup", "resctrl", "kube", "reporter", "agent", "scheduler")
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')
BEAST = re.compile(r"^\s*#\s*include\s+<boost/beast[/.]")
CALL = re.compile(r"\b(gleaner_module|add_executable|target_link_libraries)\s*\(([^)]*)\)",
                  re.S)
DECISION_MODULES = ("agent/qos", "agent/step")
IO_HEADERS = {"common/file_io.h", "cgroup/cgroup_fs.h", "cgroup/executor.h",
              "cgroup/originals_file.h", "resctrl/resctrl_fs.h", "resctrl/availability.h"}
KEYWORDS = {"NAME", "DIR", "LIBS", "EXCLUDE", "PRIVATE", "PUBLIC", "INTERFACE"}


def cmake_calls(src):
    """(folder relative to src, command, argument tokens) of every call in the tree's
    CMakeLists.txt files under the module folders."""
    for top in TOP:
        for root, _, files in os.walk(os.path.join(src, top)):
            if "CMakeLists.txt" not in files:
                continue
            with open(os.path.join(root, "CMakeLists.txt")) as f:
                text = re.sub(r"#[^\n]*", "", f.read())
            for m in CALL.finditer(text):
                yield os.path.relpath(root, src), m.group(1), m.group(2).split()


def keyword_args(tokens):
    out, key = {}, None
    for t in tokens:
        if t in KEYWORDS:
            key = t
            out.setdefault(key, [])
        elif key is not None:
            out[key].append(t)
    return out


def module_table(src):
    """module path -> the module paths it may include; and the executables' folders."""
    paths, libs = {}, {}
    executables, exe_libs = {}, {}
    for folder, command, tokens in cmake_calls(src):
        if command == "gleaner_module":
            a = keyword_args(tokens)
            path = folder + ("/" + a["DIR"][0] if a.get("DIR") else "")
            paths["gleaner_" + a["NAME"][0]] = path
            libs[path] = a.get("LIBS", [])
        elif command == "add_executable" and tokens[1:] == ["main.cc"]:
            executables[tokens[0]] = folder
        elif command == "target_link_libraries":
            exe_libs.setdefault(tokens[0], []).extend(t for t in tokens[1:] if t not in KEYWORDS)
    allowed = {path: {paths[t] for t in ts if t in paths} for path, ts in libs.items()}
    mains = set()
    for exe, folder in executables.items():
        allowed[folder] = {paths[t] for t in exe_libs.get(exe, []) if t in paths}
        mains.add(folder)
    return allowed, mains


def module_of(path, modules):
    """The module of a path relative to the source root: the longest module folder that
    holds it ("agent/qos/x.h" -> "agent/qos"), or None."""
    best = None
    for m in modules:
        if (path.startswith(m + "/")) and (best is None or len(m) > len(best)):
            best = m
    return best


def source_files(src):
    """Every C/C++ source under the module folders, relative to src."""
    for top in TOP:
        for root, _, files in os.walk(os.path.join(src, top)):
            for name in sorted(files):
                if name.endswith((".cc", ".h", ".c")):
                    yield os.path.relpath(os.path.join(root, name), src)


def beast_leaks(src):
    """Headers that include a header which itself includes Boost.Beast."""
    carriers, includes = set(), {}
    for path in source_files(src):
        if not path.endswith(".h"):
            continue
        with open(os.path.join(src, path), errors="replace") as f:
            for n, line in enumerate(f, 1):
                if BEAST.match(line):
                    carriers.add(path)
                m = INCLUDE.match(line)
                if m:
                    includes.setdefault(path, []).append((n, m.group(1)))
    return ["%s:%d: a header may not include %s, which carries Boost.Beast to every includer "
            "(include it from the .cc)" % (path, n, inc)
            for path, incs in sorted(includes.items()) for n, inc in incs if inc in carriers]


def violations(src):
    allowed, mains = module_table(src)
    out = beast_leaks(src)
    for path in source_files(src):
        here = module_of(path, allowed)
        if here is None or (here in mains and path != here + "/main.cc"):
            out.append("%s: in no module (no gleaner_module call covers it)" % path)
            continue
        with open(os.path.join(src, path), errors="replace") as f:
            for n, line in enumerate(f, 1):
                m = INCLUDE.match(line)
                if not m or "/" not in m.group(1):
                    continue
                if here in DECISION_MODULES and m.group(1) in IO_HEADERS:
                    out.append("%s:%d: %s decides from the pass's snapshot and may not include "
                               "the I/O header %s (read at agent/edge, write by the executor)"
                               % (path, n, here, m.group(1)))
                    continue
                there = module_of(m.group(1), allowed)
                if there is None or there == here or there in allowed[here]:
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
        put("common/CMakeLists.txt", "gleaner_module(NAME common LIBS spdlog::spdlog)\n")
        put("kube/CMakeLists.txt", "gleaner_module(NAME kube LIBS gleaner_common)\n")
        put("scheduler/CMakeLists.txt",
            "# the core: decisions only\n"
            "gleaner_module(NAME scheduler_core DIR core LIBS gleaner_common)\n"
            "gleaner_module(NAME scheduler_kube DIR kube\n"
            "               LIBS gleaner_common gleaner_kube gleaner_scheduler_core)\n")
        put("common/result.h", "#pragma once\n")
        put("kube/objects.h", '#include "common/result.h"\n')
        put("scheduler/core/ok.cc", '#include "scheduler/core/ok.h"\n#include "common/result.h"\n')
        put("scheduler/kube/glue.cc", '#include "kube/objects.h"\n#include "scheduler/core/ok.h"\n')
        if violations(tmp):
            print("FAIL: allowed includes reported: %s" % violations(tmp))
            return 1
        put("kube/http.h", "#include <boost/beast/http.hpp>\n")
        put("kube/http.cc", '#include "kube/http.h"\n')
        if violations(tmp):
            print("FAIL: Beast included by a header and that header by a .cc reported: %s"
                  % violations(tmp))
            return 1
        put("scheduler/core/bad.cc", '#include "kube/objects.h"\n')
        put("scheduler/stray/x.cc", "\n")
        put("kube/client.h", '#include "kube/http.h"\n')
        found = violations(tmp)
        if len(found) != 3 or not any("scheduler/core may not include kube" in f for f in found) \
                or not any("scheduler/stray/x.cc: in no module" in f for f in found) \
                or not any("kube/client.h:1: a header may not include kube/http.h" in f
                           for f in found):
            print("FAIL: the planted include scheduler/core -> kube, the stray file and the "
                  "header passing Beast on were not all reported: %s" % found)
            return 1
        for f in found:
            print("self-test: reported: " + f)
        put("agent/CMakeLists.txt", "gleaner_module(NAME agent_qos DIR qos LIBS gleaner_common)\n")
        put("common/file_io.h", "#pragma once\n")
        put("agent/qos/reads.cc", '#include "common/file_io.h"\n')
        io = [f for f in violations(tmp) if "agent/qos/reads.cc" in f]
        if len(io) != 1 or "may not include the I/O header common/file_io.h" not in io[0]:
            print("FAIL: a strategy including an I/O header of a module it may use was not "
                  "reported: %s" % io)
            return 1
        print("self-test: reported: " + io[0])
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
