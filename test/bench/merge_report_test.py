#!/usr/bin/env python3
"""bench/merge_report.py: how a run's sections and the existing report make the new page."""
import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "..", "..", "bench", "merge_report.py")
ORDER = ["## LS", "## Reaction", "## Live", "## Metrics"]
HEAD = "# Benchmarks\n\n## Commands\n\n@COMMANDS@\n\n## How to read the tables\n\n- how\n"


def section(name, command, body):
    return "## %s\n\nRun on 2026-01-01 00:00 UTC, commit abc, in 1 s: `%s`\n\n%s\n" % (
        name, command, body)


class MergeReport(unittest.TestCase):
    def run_merge(self, new, existing=None, keep_others=True):
        with tempfile.TemporaryDirectory() as tmp:
            paths = {k: os.path.join(tmp, k) for k in ("head", "sections", "out", "order")}
            with open(paths["head"], "w") as f:
                f.write(HEAD)
            with open(paths["sections"], "w") as f:
                f.write("".join(s + "\x1e\n" for s in new))
            with open(paths["order"], "w") as f:
                f.write("\n".join(ORDER) + "\n")
            if existing is not None:
                with open(paths["out"], "w") as f:
                    f.write(existing)
            args = [sys.executable, SCRIPT, paths["head"], paths["sections"], paths["out"],
                    paths["order"]] + (["--keep-others"] if keep_others else [])
            subprocess.run(args, check=True)
            with open(paths["out"]) as f:
                return f.read()

    def existing(self):
        return self.run_merge([section("LS", "ls_bench", "old ls table"),
                               section("Live", "live_bench",
                                       "intro\n\n## Ingestion\n\nold live table"),
                               section("Metrics", "reporter_bench", "old metrics")],
                              keep_others=False)

    def test_a_rerun_section_replaces_its_old_self_and_the_others_stay(self):
        text = self.run_merge([section("LS", "ls_bench --rate 5", "new ls table")], self.existing())
        self.assertIn("new ls table", text)
        self.assertNotIn("old ls table", text)
        self.assertIn("old live table", text)
        self.assertIn("old metrics", text)

    def test_a_benchmarks_own_heading_stays_inside_its_section(self):
        text = self.run_merge([section("Reaction", "reaction_bench", "reaction table")],
                              self.existing())
        # "## Ingestion" is live_bench's own heading: it must stay before "## Metrics".
        self.assertLess(text.index("## Ingestion"), text.index("## Metrics"))
        self.assertLess(text.index("## Live"), text.index("## Ingestion"))

    def test_a_new_section_takes_its_place_in_the_run_order(self):
        text = self.run_merge([section("Reaction", "reaction_bench", "reaction table")],
                              self.existing())
        positions = [text.index(t + "\n") for t in ORDER]
        self.assertEqual(positions, sorted(positions))

    def test_commands_are_every_sections_in_order(self):
        text = self.run_merge([section("Reaction", "reaction_bench", "reaction table")],
                              self.existing())
        commands = text.split("## Commands\n\n", 1)[1].split("\n\n", 1)[0]
        self.assertEqual(commands.split("\n"), ["    ls_bench", "    reaction_bench",
                                                "    live_bench", "    reporter_bench"])

    def test_a_full_run_drops_the_old_sections(self):
        text = self.run_merge([section("Reaction", "reaction_bench", "reaction table")],
                              self.existing(), keep_others=False)
        self.assertNotIn("old ls table", text)
        self.assertIn("reaction table", text)
        self.assertTrue(text.startswith(HEAD.split("@COMMANDS@")[0]))


if __name__ == "__main__":
    unittest.main()
