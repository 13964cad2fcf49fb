#!/usr/bin/python3
"""The module table of docs/architecture.md, enforced. The table is the build's: every
`gleaner_module(NAME n KIND k [DIR d] [FILES stem...] LIBS ...)` call in the project's
CMakeLists.txt files is a module whose allowed includes are the gleaner_* targets among its
LIBS; an executable's main.cc may include what its target links. Every `#include "dir/..."`
in the project's sources must cross an allowed edge. Includes inside a module are always
allowed; generated headers (no folder) are not checked.

A module is its folder (the calling folder, or its subfolder d), less the files that a
FILES module of the same folder claims: a FILES module is exactly <folder>/<stem>.h and
<stem>.cc for each stem. That is how a folder's pure part (its types and parsers) is a
library of its own without moving headers that half the tree includes.

KIND says what a module may link, an allow-list over the build graph (LIBS, transitively):
  types     data types, parsers, pure helpers: links only types modules
  decision  decides from values handed in (the agent's strategies and step, the interference
            rule): links only decision and types modules
  io        reads or writes the node, a file or the network: links anything but root
  root      composition (daemons, CLIs): links anything
So a decision module cannot link an I/O module at all, not only not include its header. The
declaration cannot lie: a types or decision module whose own sources include a header that
does I/O (IO_INCLUDE: files, sockets, syscalls, Beast/Asio, libbpf, gRPC) fails, and so does
one that links an I/O library (IO_TARGETS). Logging (spdlog) is not counted as I/O: it is
the one output a decision may make, and it changes nothing the agent reads back.

Boost.Beast stays where HTTP is spoken: a header may include <boost/beast/...> itself, but no
header may include such a header (only .cc files may), so Beast is compiled only by the files
that use it, not by every file that includes a module's header.

Usage: include_edges.py --source-dir SRC     exit 1 and one line per violation
       include_edges.py --self-test           the checker finds planted violations"""

import argparse
import os
import re
import sys
import tempfile

TOP = ("common", "net", "cgroup", "resctrl", "kube", "reporter", "agent", "scheduler")
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')
BEAST = re.compile(r"^\s*#\s*include\s+<boost/beast[/.]")
# System headers whose only use is I/O: files and directories, descriptors and syscalls,
# sockets, Asio/Beast, libbpf, gRPC, console streams.
IO_INCLUDE = re.compile(
    r"^\s*#\s*include\s+<(fstream|iostream|filesystem|unistd\.h|fcntl\.h|dirent\.h|poll\.h|"
    r"netdb\.h|sys/[^>]+|netinet/[^>]+|arpa/[^>]+|boost/beast[^>]*|boost/asio[^>]*|"
    r"bpf/[^>]+|grpcpp/[^>]+)>")
# Libraries that do I/O whatever the code calling them does.
IO_TARGETS = re.compile(r"^(gleaner_beast|gleaner_estimator_proto|OpenSSL::|gRPC::|Boost::)")
CALL = re.compile(r"\b(gleaner_module|gleaner_module_group|add_executable|"
                  r"target_link_libraries)\s*\(([^)]*)\)", re.S)
KINDS = {"types": {"types"}, "decision": {"decision", "types"},
         "io": {"types", "decision", "io"}, "root": {"types", "decision", "io", "root"}}
KEYWORDS = {"NAME", "DIR", "KIND", "FILES", "LIBS", "EXCLUDE", "PARTS", "PRIVATE", "PUBLIC",
            "INTERFACE"}
# Links that break the KIND rule today, each named with why it is still there. This list
# may only shrink: an entry that no longer matches a link is itself reported.
# While KNOWN_EXCEPTIONS lets a decision module link common, cgroup and resctrl, it still may
# not include their I/O headers (the deny-list this allow-list replaces, kept until then).
IO_HEADERS = {"common/file_io.h", "cgroup/cgroup_fs.h", "cgroup/executor.h",
              "cgroup/originals_file.h", "resctrl/resctrl_fs.h", "resctrl/availability.h"}
KNOWN_EXCEPTIONS = {
    # agent/step uses only interference.h, the pure interference rule, which is not yet its own FILES module
    ("gleaner_agent_step", "gleaner_agent_bpf"): "agent_bpf not split",
    # slo_config.cc reads the config directory (load_config_dir, stamp_config_dir) beside the parsers
    ("gleaner_agent_batch", "gleaner_agent_config"): "agent_config not split",
    ("gleaner_agent_qos", "gleaner_agent_config"): "agent_config not split",
    ("gleaner_agent_step", "gleaner_agent_config"): "agent_config not split",
    # agent/step includes nothing of agent/metrics: the link is stale and can simply go
    ("gleaner_agent_step", "gleaner_agent_metrics"): "agent_metrics not split",
    # node_snapshot.cc's load_snapshot_file reads a file beside the pure snapshot types
    ("gleaner_agent_batch", "gleaner_agent_snapshot"): "agent_snapshot not split",
    ("gleaner_agent_qos", "gleaner_agent_snapshot"): "agent_snapshot not split",
    ("gleaner_agent_step", "gleaner_agent_snapshot"): "agent_snapshot not split",
    # the cgroup types/parsers (layout parsers resource cgroup_write version hierarchy held_clamp) are not yet split from cgroup_fs/executor/originals_file; detect_driver/detect_version do I/O in layout.cc/version.cc
    ("gleaner_agent_qos", "gleaner_cgroup"): "cgroup not split",
    ("gleaner_agent_states", "gleaner_cgroup"): "cgroup not split",
    ("gleaner_agent_step", "gleaner_cgroup"): "cgroup not split",
    # common holds file_io (the one I/O file of common): split it out as a FILES module common_io
    ("gleaner_agent_batch", "gleaner_common"): "common not split",
    ("gleaner_agent_qos", "gleaner_common"): "common not split",
    ("gleaner_agent_states", "gleaner_common"): "common not split",
    ("gleaner_agent_step", "gleaner_common"): "common not split",
    ("gleaner_reporter_wire", "gleaner_common"): "common not split",
    ("gleaner_scheduler_core", "gleaner_common"): "common not split",
    ("gleaner_scheduler_fleet", "gleaner_common"): "common not split",
    ("gleaner_scheduler_gang", "gleaner_common"): "common not split",
    # kube's objects/well_known/selectors are not yet split from the HTTP client (api_client, informer, kubelet_client, config)
    ("gleaner_agent_batch", "gleaner_kube"): "kube not split",
    ("gleaner_agent_qos", "gleaner_kube"): "kube not split",
    ("gleaner_agent_states", "gleaner_kube"): "kube not split",
    ("gleaner_agent_step", "gleaner_kube"): "kube not split",
    ("gleaner_scheduler_fleet", "gleaner_kube"): "kube not split",
    # resctrl's schemata/capability are not yet split from resctrl_fs/availability
    ("gleaner_agent_qos", "gleaner_resctrl"): "resctrl not split",
    ("gleaner_agent_step", "gleaner_resctrl"): "resctrl not split",
}


class Module:
    def __init__(self, target, folder, stems, kind, libs):
        self.target, self.folder, self.stems, self.kind, self.libs = (
            target, folder, stems, kind, libs)
        # Messages name a folder module by its folder, a FILES module by folder[name].
        self.key = folder if not stems else "%s[%s]" % (folder, target[len("gleaner_"):])


def cmake_calls(src):
    """(CMakeLists.txt relative to src, its folder, command, argument tokens) of every call
    in the tree's CMakeLists.txt files under the module folders, in file order."""
    for top in TOP:
        for root, _, files in sorted(os.walk(os.path.join(src, top))):
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


def build_graph(src):
    """The modules by target, the groups (target -> parts), the executables (target ->
    folder) and every target's links."""
    modules, groups, executables, links = {}, {}, {}, {}
    for folder, command, tokens in cmake_calls(src):
        if command == "gleaner_module":
            a = keyword_args(tokens)
            target = "gleaner_" + a["NAME"][0]
            path = folder + ("/" + a["DIR"][0] if a.get("DIR") else "")
            kind = (a.get("KIND") or [None])[0]
            modules[target] = Module(target, path, set(a.get("FILES", [])), kind,
                                     a.get("LIBS", []))
            links[target] = list(a.get("LIBS", []))
        elif command == "gleaner_module_group":
            a = keyword_args(tokens)
            groups["gleaner_" + a["NAME"][0]] = ["gleaner_" + p for p in a.get("PARTS", [])]
        elif command == "add_executable" and tokens[1:] == ["main.cc"]:
            executables[tokens[0]] = folder
        elif command == "target_link_libraries":
            links.setdefault(tokens[0], []).extend(t for t in tokens[1:] if t not in KEYWORDS)
    for target, parts in groups.items():
        links[target] = parts
    return modules, groups, executables, links


def module_of(path, modules):
    """The module of a path relative to the source root: the FILES module claiming its
    stem, else the longest folder module that holds it ("agent/qos/x.h" -> "agent/qos")."""
    folder, name = os.path.split(path)
    stem = os.path.splitext(name)[0]
    best = None
    for m in modules:
        if m.stems:
            if m.folder == folder and stem in m.stems:
                return m
            continue
        if path.startswith(m.folder + "/") and (best is None or len(m.folder) > len(best.folder)):
            best = m
    return best


def source_files(src):
    """Every C/C++ source under the module folders, relative to src."""
    for top in TOP:
        for root, _, files in os.walk(os.path.join(src, top)):
            for name in sorted(files):
                if name.endswith((".cc", ".h", ".c")) and not name.endswith(".bpf.c"):
                    yield os.path.relpath(os.path.join(root, name), src)


def read_lines(src, path):
    with open(os.path.join(src, path), errors="replace") as f:
        return list(enumerate(f, 1))


def beast_leaks(src):
    """Headers that include a header which itself includes Boost.Beast."""
    carriers, includes = set(), {}
    for path in source_files(src):
        if not path.endswith(".h"):
            continue
        for n, line in read_lines(src, path):
            if BEAST.match(line):
                carriers.add(path)
            m = INCLUDE.match(line)
            if m:
                includes.setdefault(path, []).append((n, m.group(1)))
    return ["%s:%d: a header may not include %s, which carries Boost.Beast to every includer "
            "(include it from the .cc)" % (path, n, inc)
            for path, incs in sorted(includes.items()) for n, inc in incs if inc in carriers]


def link_chains(start, links):
    """Every target `start` links, transitively, with the chain of targets leading to it."""
    chains, todo = {}, [(start, [])]
    while todo:
        target, chain = todo.pop()
        for lib in links.get(target, []):
            if lib not in chains and lib != start:
                chains[lib] = chain + [lib]
                todo.append((lib, chain + [lib]))
    return chains


def kind_violations(modules, links):
    """Missing KINDs and links that leave a module's allow-list; and the known exceptions
    that no longer match (so the list can only shrink)."""
    out, used = [], set()
    for m in sorted(modules.values(), key=lambda m: m.key):
        if m.kind not in KINDS:
            out.append("%s: gleaner_%s declares no KIND (one of %s)"
                       % (m.key, m.target[len("gleaner_"):], "|".join(KINDS)))
            continue
        def breach(lib):
            """Why `m` may not link `lib`, or None."""
            there = modules.get(lib)
            if there is not None:
                ok = there.kind in KINDS[m.kind] or there.kind not in KINDS
                return None if ok else "%s (%s)" % (lib, there.kind)
            if IO_TARGETS.match(lib) and m.kind in ("types", "decision"):
                return "%s (an I/O library)" % lib
            return None
        for lib, chain in sorted(link_chains(m.target, links).items()):
            what = breach(lib)
            # One line per breach: what a forbidden target links in turn is not repeated.
            if what is None or any(breach(t) for t in chain[:-1]):
                continue
            if (m.target, lib) in KNOWN_EXCEPTIONS:
                used.add((m.target, lib))
                continue
            via = " via " + " -> ".join(chain[:-1]) if len(chain) > 1 else ""
            out.append("%s: %s module %s may not link %s%s" % (m.key, m.kind, m.target, what,
                                                                  via))
    for target, lib in sorted(set(KNOWN_EXCEPTIONS) - used):
        out.append("KNOWN_EXCEPTIONS: %s -> %s is no longer linked: drop the entry"
                   % (target, lib))
    return out


def violations(src):
    modules, _, executables, links = build_graph(src)
    out = beast_leaks(src) + kind_violations(modules, links)
    # What each module may include: its own LIBS' modules; main.cc what its target links.
    # Linking a folder's module also allows the headers of the FILES modules of the same
    # folder that it links: they were one module before the split.
    def may_include(libs):
        keys = set()
        for t in (t for t in libs if t in modules):
            keys.add(modules[t].key)
            keys.update(modules[p].key for p in modules[t].libs
                        if p in modules and modules[p].folder == modules[t].folder)
        return keys
    allowed = {m.key: may_include(m.libs) for m in modules.values()}
    table = list(modules.values())
    mains = {}
    for exe, folder in executables.items():
        mains[folder + "/main.cc"] = may_include(links.get(exe, []))
    for path in source_files(src):
        if path in mains:
            here_key, may = os.path.dirname(path), mains[path]
            here = None
        else:
            here = module_of(path, table)
            if here is None:
                out.append("%s: in no module (no gleaner_module call covers it)" % path)
                continue
            here_key, may = here.key, allowed[here.key]
        for n, line in read_lines(src, path):
            if here is not None and here.kind in ("types", "decision") and IO_INCLUDE.match(line):
                out.append("%s:%d: %s is declared KIND %s but does I/O (%s)"
                           % (path, n, here.key, here.kind, line.strip()))
                continue
            m = INCLUDE.match(line)
            if not m or "/" not in m.group(1):
                continue
            if here is not None and here.kind == "decision" and m.group(1) in IO_HEADERS:
                out.append("%s:%d: decision module %s may not include the I/O header %s"
                           % (path, n, here.key, m.group(1)))
                continue
            there = module_of(m.group(1), table)
            if there is None or there.key == here_key or there.key in may:
                continue
            out.append("%s:%d: %s may not include %s (%s)" % (path, n, here_key, there.key,
                                                             m.group(1)))
    return out


def expect(found, wanted, what):
    """Fails unless `found` is exactly one line for each of `wanted`'s substrings."""
    missing = [w for w in wanted if not any(w in f for f in found)]
    if missing or len(found) != len(wanted):
        print("FAIL: %s: wanted %s, found %s" % (what, wanted, found))
        return False
    for f in found:
        print("self-test: reported: " + f)
    return True


def self_test():
    global KNOWN_EXCEPTIONS
    KNOWN_EXCEPTIONS = {}  # the planted trees have their own
    with tempfile.TemporaryDirectory(prefix="gleaner-layering-") as tmp:
        def put(path, text):
            os.makedirs(os.path.dirname(os.path.join(tmp, path)), exist_ok=True)
            with open(os.path.join(tmp, path), "w") as f:
                f.write(text)
        put("common/CMakeLists.txt",
            "gleaner_module(NAME common_io KIND io FILES file_io LIBS gleaner_common)\n"
            "gleaner_module(NAME common KIND types LIBS spdlog::spdlog)\n")
        put("kube/CMakeLists.txt",
            "# the pure part first: the folder module leaves its files out\n"
            "gleaner_module(NAME kube_types KIND types FILES objects LIBS gleaner_common)\n"
            "gleaner_module(NAME kube KIND io LIBS gleaner_common gleaner_common_io\n"
            "               gleaner_kube_types gleaner_beast)\n")
        put("scheduler/CMakeLists.txt",
            "gleaner_module(NAME scheduler_core KIND decision DIR core LIBS gleaner_common)\n"
            "gleaner_module(NAME scheduler_kube KIND io DIR kube\n"
            "               LIBS gleaner_common gleaner_kube gleaner_scheduler_core)\n")
        put("common/result.h", "#pragma once\n#include <string>\n")
        put("common/file_io.h", "#pragma once\n")
        put("common/file_io.cc", "#include <unistd.h>\n#include <fstream>\n")
        put("kube/objects.h", '#include "common/result.h"\n')
        put("kube/objects.cc", '#include "kube/objects.h"\n')
        put("kube/client.cc", '#include "kube/objects.h"\n#include "common/file_io.h"\n'
            "#include <sys/socket.h>\n")
        put("scheduler/core/ok.cc", '#include "scheduler/core/ok.h"\n#include "common/result.h"\n')
        put("scheduler/kube/glue.cc", '#include "kube/objects.h"\n#include "scheduler/core/ok.h"\n')
        if not expect(violations(tmp), [], "an allowed tree"):
            return 1
        put("kube/http.h", "#include <boost/beast/http.hpp>\n")
        put("kube/http.cc", '#include "kube/http.h"\n')
        if not expect(violations(tmp), [], "Beast included by a header and that header by a .cc"):
            return 1
        put("scheduler/core/bad.cc", '#include "kube/objects.h"\n')
        put("scheduler/stray/x.cc", "\n")
        put("kube/client.h", '#include "kube/http.h"\n')
        if not expect(violations(tmp), ["scheduler/core may not include kube[kube_types]",
                                        "scheduler/stray/x.cc: in no module",
                                        "kube/client.h:1: a header may not include kube/http.h"],
                      "a forbidden include, a stray file, a header passing Beast on"):
            return 1
        os.remove(os.path.join(tmp, "scheduler/core/bad.cc"))
        os.remove(os.path.join(tmp, "scheduler/stray/x.cc"))
        os.remove(os.path.join(tmp, "kube/client.h"))
        # The planted cases of the KIND rule: a decision module linking an I/O module
        # (directly, and through a types module that links one), a types module whose source
        # does I/O (the declaration lies), and a module with no KIND.
        put("agent/CMakeLists.txt",
            "gleaner_module(NAME agent_states KIND types DIR states LIBS gleaner_kube)\n"
            "gleaner_module(NAME agent_qos KIND decision DIR qos\n"
            "               LIBS gleaner_common gleaner_kube_types gleaner_agent_states)\n"
            "gleaner_module(NAME agent_step KIND decision DIR step\n"
            "               LIBS gleaner_common gleaner_common_io)\n"
            "gleaner_module(NAME agent_edge DIR edge LIBS gleaner_common)\n")
        put("agent/qos/strategy.cc", '#include "kube/objects.h"\n')
        put("agent/states/classes.cc", '#include "kube/objects.h"\n')
        put("agent/step/step.cc", "\n")
        put("agent/edge/read.cc", "#include <fstream>\n")
        put("kube/objects.cc", '#include "kube/objects.h"\n#include <fstream>\n')
        found = violations(tmp)
        if not expect(found, [
                "agent/step: decision module gleaner_agent_step may not link gleaner_common_io (io)",
                "agent/qos: decision module gleaner_agent_qos may not link gleaner_kube (io) "
                "via gleaner_agent_states",
                "agent/states: types module gleaner_agent_states may not link gleaner_kube (io)",
                "agent/edge: gleaner_agent_edge declares no KIND",
                "kube/objects.cc:2: kube[kube_types] is declared KIND types but does I/O "
                "(#include <fstream>)"], "the planted KIND violations"):
            return 1
        # A known exception silences its link; one that matches no link is reported.
        KNOWN_EXCEPTIONS = {("gleaner_agent_step", "gleaner_common_io"): "planted",
                            ("gleaner_agent_qos", "gleaner_net"): "planted, stale"}
        step = [f for f in violations(tmp) if "agent_step" in f or "KNOWN_EXCEPTIONS" in f]
        KNOWN_EXCEPTIONS = {}
        if not expect(step, ["KNOWN_EXCEPTIONS: gleaner_agent_qos -> gleaner_net is no longer "
                             "linked"], "a known exception and a stale one"):
            return 1
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
    print("%d layering violations" % len(found))
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
