#!/usr/bin/env python3
"""Writes docs/benchmarks.md from bench/run's parts.

    merge_report.py HEAD SECTIONS OUT ORDER [--keep-others]

HEAD is the page's head (title, machine, commands placeholder, methods); SECTIONS holds the
sections of this run, each starting with its "## title" line and ending with a line of one
\\x1e; ORDER lists every section title in the order bench/run runs them. With --keep-others
(bench/run --only), the sections of the existing OUT that this run did not redo stay; the
new ones replace those of the same title. Sections are put in ORDER's order, and the
"@COMMANDS@" line of HEAD becomes every section's command.
"""
import os
import re
import sys

FIXED = {"## Machine", "## Commands", "## How to read the tables"}


def title(section):
    return section.split("\n", 1)[0]


def old_sections(text, order):
    """The report's sections; a "## " heading a benchmark printed itself (not in ORDER)
    belongs to the section before it."""
    sections = []
    for chunk in re.split(r"(?m)^(?=## )", text)[1:]:
        chunk = chunk.rstrip("\n") + "\n"
        if title(chunk) in FIXED:
            continue
        if sections and title(chunk) not in order:
            sections[-1] += "\n" + chunk
        else:
            sections.append(chunk)
    return sections


def merge(head, new, old, order):
    """The report text: `new` sections over `old` ones, in `order`, with the commands."""
    replacing = {title(s): s for s in new}
    merged = [replacing.pop(title(s), s) for s in old]
    merged += [s for s in new if title(s) in replacing]
    # Stable: a section whose title ORDER does not know keeps its place at the end.
    merged.sort(key=lambda s: order.index(title(s)) if title(s) in order else len(order))
    commands = []
    for s in merged:
        found = re.search(r"^Run on [^`]*`([^`]+)`", s, re.M)
        if found and found.group(1) not in commands:
            commands.append(found.group(1))
    head = head.replace("@COMMANDS@", "\n".join("    " + c for c in commands))
    return head.rstrip("\n") + "\n\n" + "\n".join(merged)


def main(argv):
    head_path, sections_path, out_path, order_path = argv[1:5]
    keep_others = "--keep-others" in argv[5:]
    order = [line.rstrip("\n") for line in open(order_path)]
    new = [s.strip("\n") + "\n" for s in open(sections_path).read().split("\x1e\n") if s.strip()]
    old = []
    if keep_others and os.path.exists(out_path):
        old = old_sections(open(out_path).read(), order)
    text = merge(open(head_path).read(), new, old, order)
    with open(out_path + ".tmp", "w") as f:
        f.write(text)
    os.replace(out_path + ".tmp", out_path)


if __name__ == "__main__":
    main(sys.argv)
