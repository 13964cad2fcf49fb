"""The demo's plain-words verdicts (scripts/demo): a benefit is claimed only when the run
exercised what it credits, and a trend only when enough load steps show it."""
import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                "scripts", "demo"))
import fleet  # noqa: E402
import memory_phase  # noqa: E402
import summary  # noqa: E402
import view  # noqa: E402


def memory_run(peak, oom_kills=0, evicted=(), ls_alive=True):
    return {"title": "t", "peak": peak, "oom_kills": oom_kills, "killed": [],
            "evicted": list(evicted), "ls_alive": ls_alive}


def managed_steps(batch):
    return {"steps": [{"conns": c, "batch_milli": m, "p99_ms": 1.0} for c, m in batch],
            "be_cpu_s": 1.0}


class MemoryVerdict(unittest.TestCase):
    def verdict(self, unmanaged, managed):
        return " ".join(memory_phase.summary(unmanaged, managed)[1])

    def test_better_only_when_the_managed_half_reached_the_threshold(self):
        # Unmanaged hit the kernel's OOM killer; with Gleaner the load stayed below 70%:
        # nothing the agent did made the difference.
        v = self.verdict(memory_run(1.0, oom_kills=2), memory_run(0.55))
        self.assertNotIn("better with Gleaner", v)
        self.assertIn("inconclusive", v)
        self.assertIn("55%", v)

    def test_better_when_the_agent_evicted_at_the_threshold(self):
        v = self.verdict(memory_run(1.0, oom_kills=2),
                         memory_run(0.72, evicted=["mem-1", "mem-2"]))
        self.assertIn("better with Gleaner", v)

    def test_oom_kills_with_gleaner_are_no_benefit(self):
        v = self.verdict(memory_run(1.0, oom_kills=2), memory_run(1.0, oom_kills=1))
        self.assertIn("NO benefit", v)


class BatchCapacityVerdict(unittest.TestCase):
    def line(self, batch):
        unmanaged = {"steps": [], "be_cpu_s": 0.0}
        for line in view.verdict(unmanaged, managed_steps(batch)):
            if "Batch capacity" in line:
                return line
        return ""

    def test_two_steps_do_not_make_a_trend(self):
        line = self.line([(10, 1500), (40, 900)])
        self.assertNotIn("shrinks", line)
        self.assertIn("too few load steps", line)

    def test_a_steady_shrink_over_three_steps_is_read(self):
        self.assertIn("shrinks as LS load grows", self.line([(10, 1500), (20, 1200), (40, 900)]))

    def test_a_bounce_is_not_a_shrink(self):
        line = self.line([(10, 1500), (20, 800), (40, 1400)])
        self.assertNotIn("shrinks as", line)
        self.assertIn("no steady shrink", line)


def phase(be_cpu_s, p99):
    return {"steps": [{"conns": 1, "rps": 40.0, "p99": p99}], "be_cpu_s": be_cpu_s}


class HarvestTradeVerdict(unittest.TestCase):
    """What Gleaner traded in the live CPU phases: BE harvest against LS p99 (view.trade)."""

    def test_a_harvest_loss_without_a_better_p99_is_called_a_loss(self):
        # Issue #59's run: 14.0 cpu-s with Gleaner, 35.8 unmanaged, p99 within the noise.
        v = view.trade(phase(35.8, 25.3), phase(14.0, 24.3))
        self.assertIn("harvested 39% of what BE got unmanaged", v)
        self.assertIn("LS p99 24.3 ms with Gleaner, 25.3 ms unmanaged", v)
        self.assertIn("not measurably better", v)
        self.assertIn("a loss on this run", v)
        self.assertNotIn("no clear difference", v)

    def test_a_worse_p99_with_less_harvest_is_a_loss(self):
        v = view.trade(phase(30.0, 10.0), phase(10.0, 20.0))
        self.assertIn("LS p99 was worse", v)
        self.assertIn("a loss on this run", v)

    def test_a_worse_p99_with_the_same_harvest_is_a_loss(self):
        self.assertIn("a loss on this run", view.trade(phase(10.0, 10.0), phase(10.0, 20.0)))

    def test_a_better_p99_for_less_harvest_is_a_trade_with_both_figures(self):
        v = view.trade(phase(40.0, 20.0), phase(10.0, 5.0))
        self.assertIn("harvested 25% of what BE got unmanaged (10.0 of 40.0 cpu-s)", v)
        self.assertIn("75% lower", v)
        self.assertIn("a trade of harvest for latency", v)
        self.assertNotIn("loss", v)

    def test_a_better_p99_at_the_same_harvest_is_a_gain(self):
        self.assertIn("a gain on this run", view.trade(phase(10.0, 20.0), phase(9.5, 10.0)))

    def test_same_harvest_and_p99_claim_nothing(self):
        v = view.trade(phase(10.0, 20.0), phase(9.5, 19.0))
        self.assertIn("no cost and no benefit", v)
        self.assertNotIn("gain", v)

    def test_more_harvest_at_the_same_p99_is_a_gain(self):
        v = view.trade(phase(1.0, 36.0), phase(1.2, 32.8))
        self.assertIn("harvested 120%", v)
        self.assertIn("more harvest at the same latency, a gain on this run", v)

    def test_no_unmanaged_harvest_is_not_compared(self):
        self.assertIn("NOT compared", view.trade(phase(0.0, 20.0), phase(1.0, 10.0)))

    def test_no_p99_is_not_judged(self):
        v = view.trade(phase(10.0, None), phase(4.0, None))
        self.assertIn("harvested 40%", v)
        self.assertIn("NOT a trade this run can judge", v)

    def test_the_verdict_carries_the_trade(self):
        lines = view.verdict(phase(35.8, 25.3), phase(14.0, 24.3))
        self.assertTrue(any(line.strip().startswith("BE harvest: ") and "a loss" in line
                            for line in lines), lines)


def surge(p99, requests=150, be_cores=0.5, lowest=None):
    return {"loadSeconds": 8.0, "lsP99Ms": p99, "lsRequests": requests, "beCores": be_cores,
            "beQuotaCoresLowest": lowest}


class FleetSurgeVerdict(unittest.TestCase):
    """The fleet's LS surge with Gleaner beside the same surge unmanaged (fleet.py)."""

    def test_better_only_beyond_the_noise(self):
        self.assertIn("better with Gleaner", summary.surge_verdict(surge(8.0), surge(12.0)))
        self.assertIn("no clear difference", summary.surge_verdict(surge(11.5), surge(12.0)))

    def test_worse_with_gleaner_is_said(self):
        self.assertIn("NO benefit", summary.surge_verdict(surge(15.0), surge(12.0)))

    def test_no_comparison_when_a_limit_held_the_unmanaged_surge(self):
        v = summary.surge_verdict(surge(8.0), surge(12.0, lowest=0.4))
        self.assertIn("NOT compared", v)
        self.assertNotIn("better", v)

    def test_no_comparison_without_requests_in_both(self):
        self.assertIn("NOT compared", summary.surge_verdict(surge(8.0), surge(0.0, requests=0)))
        self.assertIn("NOT compared", summary.surge_verdict(None, surge(12.0)))


class FakeProcess:
    """A Popen's poll() and returncode: None while it runs."""

    def __init__(self, status):
        self.returncode = status

    def poll(self):
        return self.returncode


class FakeNode:
    """fleet_node.RealNode's memory record (node_proc.between) and BE quota."""

    def __init__(self, written):
        self.proc = self
        self.written = written  # (monotonic time, used bytes)

    def between(self, start, _end, threshold_bytes):
        seen = [w for w in self.written if start <= w[0]]
        return (max(used for _, used in seen),
                next((t for t, used in seen if used >= threshold_bytes), None))

    def cpu_quota_cores(self, _rel):
        return 0.02


class StoryStub(fleet.Fleet):
    """fleet.Fleet's run() over steps that only record themselves (no process, no I/O)."""

    def __init__(self, raises, agent_status=None):
        self.raises, self.ran = raises, []
        self.steps_shown, self.not_shown, self.events = [], [], []
        self.dir = "fleet"
        agent = FakeProcess(agent_status)
        self.gleaner, self.procs = [("agent-m1-n1", agent)], [agent]
        for key, _, _ in fleet.STEPS:  # instance attributes, ahead of the class's steps
            setattr(self, "step_" + key, lambda key=key: self.step(key))

    def step(self, key):
        self.ran.append(key)
        if key in self.raises:
            raise self.raises[key]

    def start(self):
        pass

    def summary(self):
        return {"stepsShown": self.steps_shown, "notShown": self.not_shown}

    def event(self, text):
        self.events.append(text)


class FleetStory(unittest.TestCase):
    """A step the machine cannot give its precondition is reported and the story goes on;
    Gleaner failing is still the run's failure (fleet.py run)."""

    def test_a_step_not_shown_skips_its_dependents_and_the_rest_runs(self):
        story = StoryStub({"placement": fleet.NotShown("not within 60s: 400m of batch room")})
        doc = story.run(partial=True)
        self.assertEqual(story.ran, ["placement", "reclaim", "completion"])
        self.assertEqual(doc["stepsShown"], ["reclaim", "completion"])
        reasons = {n["step"].split(".")[0]: n["reason"] for n in doc["notShown"]}
        self.assertEqual(sorted(reasons), ["1", "2", "2b", "3"])
        self.assertIn("400m of batch room", reasons["1"])
        self.assertEqual(reasons["2b"], "it needs step 2, not shown")
        self.assertEqual(reasons["3"], "it needs step 1, not shown")

    def test_a_later_step_not_shown_leaves_the_others(self):
        story = StoryStub({"surge": fleet.NotShown("BE quota 0.10 cores")})
        story.run(partial=True)
        self.assertEqual(story.ran, ["placement", "surge", "eviction", "reclaim", "completion"])

    def test_gleaner_failing_is_still_a_failure(self):
        story = StoryStub({"eviction": fleet.FleetError("over the threshold, no eviction")})
        with self.assertRaises(fleet.FleetError):
            story.run(partial=True)

    def test_a_crashed_agent_is_a_failure_not_a_step_not_shown(self):
        story = StoryStub({"placement": fleet.NotShown("no room")}, agent_status=-11)
        with self.assertRaisesRegex(fleet.FleetError, "agent-m1-n1 exited with status -11"):
            story.run(partial=True)

    def test_no_eviction_below_the_threshold_is_not_shown_over_it_a_failure(self):
        story = StoryStub({})
        mib = float(1 << 20)
        story.node = FakeNode([(1.0, 500 * mib), (2.0, 700 * mib)])
        v = story.below_threshold("spark-pi-1 COMPLETED", 0.0, 819.2)
        self.assertIsInstance(v, fleet.NotShown)
        self.assertIn("peaked at 700 MiB, below the 819 MiB threshold (BE quota 0.02 cores)",
                      str(v))
        story.node = FakeNode([(1.0, 500 * mib), (2.0, 900 * mib)])
        self.assertIsNone(story.below_threshold("no eviction", 0.0, 819.2))

    def test_the_whole_story_or_an_error_without_partial(self):
        with self.assertRaises(fleet.NotShown):
            StoryStub({"placement": fleet.NotShown("no room")}).run()


class AgentReactionHistogram(unittest.TestCase):
    """The agent's own reaction times, read from its Prometheus histogram (summary.py)."""

    METRICS = {'gleaner_be_suppress_reaction_seconds_bucket{le="0.001"}': 2.0,
               'gleaner_be_suppress_reaction_seconds_bucket{le="0.015"}': 9.0,
               'gleaner_be_suppress_reaction_seconds_bucket{le="1"}': 9.0,
               'gleaner_be_suppress_reaction_seconds_bucket{le="+Inf"}': 10.0,
               'gleaner_be_suppress_reaction_seconds_count': 10.0,
               'gleaner_sampling_pass_duration_seconds_bucket{le="0.001"}': 50.0}

    def test_percentiles_are_the_bounds_of_the_buckets_that_hold_them(self):
        buckets = summary.histogram_buckets(self.METRICS, "gleaner_be_suppress_reaction_seconds")
        self.assertEqual(buckets, [(0.001, 2.0), (0.015, 9.0), (1.0, 9.0),
                                   (float("inf"), 10.0)])
        # 5 of 10 lie within 15 ms; the 99th is beyond the last finite bound.
        self.assertEqual(summary.agent_reactions(buckets),
                         {"p50AtMost": 15.0, "p99AtMost": None, "reactions": 10})

    def test_no_observation_gives_no_figure(self):
        self.assertEqual(summary.agent_reactions([]),
                         {"p50AtMost": None, "p99AtMost": None, "reactions": 0})
        self.assertEqual(summary.agent_reactions([(0.001, 0.0), (float("inf"), 0.0)]),
                         {"p50AtMost": None, "p99AtMost": None, "reactions": 0})


if __name__ == "__main__":
    unittest.main()
