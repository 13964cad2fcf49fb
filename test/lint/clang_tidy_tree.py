#!/usr/bin/env python3
"""Runs .clang-tidy over every C++ source file of the project in a build's compile database.

A file clang cannot parse (clang 14 does not follow GCC's libstdc++ through every Asio
coroutine) is listed as not parsed, with clang's first error, and its other findings are
dropped: they would be artefacts of the failed parse. Any finding in a file that parsed is a
failure. Exit 0 when there is none, 1 otherwise, 77 (skipped) without clang-tidy.

  clang_tidy_tree.py --build-dir build [--jobs 2] [--no-analyzer] [--no-tests] [--self-test]
"""
import argparse
import concurrent.futures
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

# Clang 14 does not see libstdc++'s C++20 coroutines through Boost.Asio's feature detection
# (it looks for the Coroutines TS); they are there, so Asio is told so and the servers,
# clients and the agent's loop parse like the rest.
CLANG_EXTRA_ARGS = ["-DBOOST_ASIO_HAS_CO_AWAIT=1", "-DBOOST_ASIO_HAS_STD_COROUTINE=1"]

DIAGNOSTIC = re.compile(r"^(?P<path>/[^:]+):(?P<line>\d+):\d+: (?P<kind>warning|error): "
                        r"(?P<text>.*?)(?: \[(?P<check>[\w.,-]+)\])?$")


UNITY_INCLUDE = re.compile(r'^#include "(?P<path>/[^"]+\.cc)"$', re.M)


def expanded_entries(build_dir):
    """The compile database with each unity batch (GLEANER_UNITY_BUILD) expanded back into
    its source files, each compiled with the batch's command."""
    with open(os.path.join(build_dir, "compile_commands.json")) as f:
        entries = json.load(f)
    out = []
    for entry in entries:
        batch = os.path.join(entry["directory"], entry["file"])
        if "/Unity/unity_" not in batch:
            out.append(entry)
            continue
        with open(batch) as f:
            sources = UNITY_INCLUDE.findall(f.read())
        for source in sources:
            command = entry["command"].replace(entry["file"], source)
            out.append({"directory": entry["directory"], "file": source, "command": command})
    return out


def project_sources(entries, build_dir, source_dir, with_tests=True):
    """The .cc files of the project (not generated ones) among the database's entries."""
    source_dir = os.path.realpath(source_dir)
    build_dir = os.path.realpath(build_dir)
    files = set()
    for entry in entries:
        path = os.path.realpath(os.path.join(entry["directory"], entry["file"]))
        if not path.endswith(".cc") or not path.startswith(source_dir + os.sep):
            continue
        top = os.path.relpath(path, source_dir).split(os.sep)[0]
        if path.startswith(build_dir + os.sep) or top.startswith("build"):
            continue
        if not with_tests and top in ("test", "fuzz"):
            continue
        files.add(path)
    return sorted(files)


def tidy_one(clang_tidy, build_dir, path, checks):
    cmd = [clang_tidy, "-p", build_dir, "--quiet", path]
    cmd += ["--extra-arg=" + arg for arg in CLANG_EXTRA_ARGS]
    if checks:
        cmd.insert(1, "--checks=" + checks)
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True, check=False)
    findings, parse_errors = [], []
    for line in proc.stdout.splitlines():
        m = DIAGNOSTIC.match(line)
        if not m:
            continue
        if m.group("kind") == "error" and (m.group("check") or "").startswith("clang-diagnostic"):
            parse_errors.append(line)
        elif m.group("check"):
            findings.append(line)
    return path, findings, parse_errors


def run(build_dir, source_dir, jobs, checks, with_tests=True):
    clang_tidy = shutil.which("clang-tidy")
    if not clang_tidy:
        print("skipped: no clang-tidy on PATH (Debian package clang-tidy)")
        return 77
    entries = expanded_entries(build_dir)
    files = project_sources(entries, build_dir, source_dir, with_tests)
    if not files:
        print("no project sources in %s/compile_commands.json" % build_dir)
        return 1
    unparsed, failed = [], []
    with tempfile.TemporaryDirectory(prefix="gleaner-tidy-db-") as db, \
            concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool:
        with open(os.path.join(db, "compile_commands.json"), "w") as f:
            json.dump(entries, f)
        for path, findings, parse_errors in pool.map(
                lambda p: tidy_one(clang_tidy, db, p, checks), files):
            rel = os.path.relpath(path, source_dir)
            if parse_errors:
                unparsed.append((rel, parse_errors[0]))
            elif findings:
                failed.append((rel, findings))
    print("clang-tidy: %d files, %d parsed, %d not parsed by clang, %d with findings"
          % (len(files), len(files) - len(unparsed), len(unparsed), len(failed)))
    for rel, first in unparsed:
        print("  not parsed: %s: %s" % (rel, first.split(": error: ", 1)[-1]))
    seen = set()
    for rel, findings in failed:
        for line in findings:
            if line not in seen:  # a header's finding repeats in every file that includes it
                seen.add(line)
                print(line)
    return 1 if failed else 0


def self_test(jobs):
    """A planted naming violation is reported; the same file without it passes."""
    if not shutil.which("clang-tidy"):
        print("skipped: no clang-tidy on PATH")
        return 77
    here = os.path.dirname(os.path.abspath(__file__))
    config = os.path.join(here, "..", "..", ".clang-tidy")
    with tempfile.TemporaryDirectory(prefix="gleaner-tidy-") as tmp:
        src = os.path.join(tmp, "src")
        build = os.path.join(tmp, "out")
        os.makedirs(os.path.join(src, "common"))
        os.makedirs(build)
        shutil.copy(config, os.path.join(src, ".clang-tidy"))
        planted = os.path.join(src, "common", "planted.cc")
        with open(os.path.join(build, "compile_commands.json"), "w") as f:
            json.dump([{"directory": build, "file": planted,
                        "command": "c++ -std=c++20 -c %s -o planted.o" % planted}], f)
        results = []
        for body in ("int BadlyNamed() { return 1; }\n", "int well_named() { return 1; }\n"):
            with open(planted, "w") as f:
                f.write(body)
            results.append(run(build, src, jobs, None))
    if results != [1, 0]:
        print("self-test failed: expected [1, 0] (planted finding, then clean), got %s" % results)
        return 1
    print("self-test passed: the planted finding failed the run, the clean file passed")
    return 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build-dir", default="build")
    parser.add_argument("--source-dir", default=os.path.join(os.path.dirname(__file__), "..", ".."))
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--no-analyzer", action="store_true",
                        help="leave out clang-analyzer-* (the slow path-sensitive checks)")
    parser.add_argument("--no-tests", action="store_true",
                        help="leave out test/ and fuzz/ (the shipped code and benchmarks only)")
    parser.add_argument("--self-test", action="store_true")
    args = parser.parse_args()
    if args.self_test:
        return self_test(args.jobs)
    checks = "-clang-analyzer-*" if args.no_analyzer else None
    return run(os.path.abspath(args.build_dir), os.path.realpath(args.source_dir), args.jobs,
               checks, not args.no_tests)


if __name__ == "__main__":
    sys.exit(main())
