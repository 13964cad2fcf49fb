#!/usr/bin/python3
"""The docs name only flags that exist and link only files that exist: every `--flag` in
README.md and docs/*.md is in the --help of a gleaner-agent or gleaner-scheduler
subcommand, unless the page documents another tool (the benchmarks, the test VM, kubectl,
ctest...); every relative Markdown link resolves.

Usage: doc_flags_test.py --bin-dir BUILD/bin --source-dir SRC   (exit 77: binaries missing)"""

import argparse
import os
import re
import subprocess
import sys

# Flags of other programs the docs show in commands.
OTHER_TOOLS = {
    "--dry-run", "--ignore-not-found", "--subresource", "--type", "--output-on-failure",
    "--test-dir", "--build", "--target", "--scope", "--help", "--gtest", "--cleanup",
    "--live-only", "--kube-context-name", "--cacert", "--resolve",
    # karmada-scheduler's (docs/karmada-estimator.md)
    "--enable-scheduler-estimator", "--insecure-skip-estimator-verify",
    "--scheduler-estimator-ca-file", "--scheduler-estimator-timeout",
    # kubectl's and koord-manager's (docs/deploy.md, docs/migrating-from-koordinator.md)
    "--server-side", "--force-conflicts", "--show-managed-fields", "--field-selector",
    "--controllers", "--noderesource-plugins", "--feature-gates",
}
# Pages (or lines) about tools with flags of their own: benchmarks, the test VM, the test
# stand-ins, scripts.
OWN_TOOL_PAGES = {"benchmarks.md", "testing-vm.md", "testing.md"}
OWN_TOOL_LINE = re.compile(r"bench/|_bench|run\.sh|scripts/|live\.py|fetch-kernel|bench_smoke|LINT_FLAGS|clang_tidy_tree")


def subcommands(binary):
    out = subprocess.run([binary, "--help"], capture_output=True, text=True, timeout=30).stdout
    m = re.search(r"(?i)SUBCOMMANDS:\n(.*)", out, re.S)
    return re.findall(r"^\s+([a-z][a-z0-9-]*)\s", m.group(1), re.M) if m else []


def flags_of(binary):
    flags = set(re.findall(r"--[a-z][a-z0-9-]*",
                           subprocess.run([binary, "--help"], capture_output=True, text=True,
                                          timeout=30).stdout))
    for sub in subcommands(binary):
        out = subprocess.run([binary, sub, "--help"], capture_output=True, text=True,
                             timeout=30).stdout
        flags |= set(re.findall(r"--[a-z][a-z0-9-]*", out))
    return flags


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin-dir", required=True)
    ap.add_argument("--source-dir", required=True)
    o = ap.parse_args()
    bins = [os.path.join(o.bin_dir, b) for b in ("gleaner-agent", "gleaner-scheduler")]
    if not all(os.access(b, os.X_OK) for b in bins):
        print("SKIP: binaries missing in " + o.bin_dir)
        return 77
    known = set()
    for b in bins:
        known |= flags_of(b)
    pages = [os.path.join(o.source_dir, "README.md")] + sorted(
        os.path.join(o.source_dir, "docs", f) for f in os.listdir(os.path.join(o.source_dir, "docs"))
        if f.endswith(".md"))
    failures = []
    for page in pages:
        name = os.path.basename(page)
        with open(page) as f:
            lines = f.read().splitlines()
        in_other = name in OWN_TOOL_PAGES
        for n, line in enumerate(lines, 1):
            for link in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", line):
                if re.match(r"[a-z]+:", link):
                    continue
                target = os.path.normpath(os.path.join(os.path.dirname(page), link))
                if not os.path.exists(target):
                    failures.append("%s:%d: link %s does not resolve" % (name, n, link))
            if in_other or OWN_TOOL_LINE.search(line):
                continue
            for flag in re.findall(r"(?<![\w-])--[a-z][a-z0-9-]*", line):
                if flag not in known and flag not in OTHER_TOOLS:
                    failures.append("%s:%d: %s is no flag of gleaner-agent or gleaner-scheduler"
                                    % (name, n, flag))
    for f in failures:
        print("FAIL: " + f)
    print("%d pages, %d known flags, %d problems" % (len(pages), len(known), len(failures)))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
