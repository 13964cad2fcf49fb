#!/usr/bin/python3
"""Every alert of deploy/monitoring/gleaner-alerts.yaml under `promtool test rules`: it fires
when it should and not otherwise, on series labelled as the shipped ServiceMonitors
label them (job from app.kubernetes.io/name, the agent's node from its pod). The cases
are below; annotations are the rule's templates filled with the expected labels/value.

Usage: alerts_test.py [--promtool /usr/bin/promtool]   (exit 77 without promtool)"""

import argparse
import os
import re
import subprocess
import sys
import tempfile

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
RULES = os.path.join(HERE, "..", "..", "deploy", "monitoring", "gleaner-alerts.yaml")

AGENT = 'job="gleaner-agent",instance="10.0.0.1:9316",node="n1",namespace="kube-system",pod="gleaner-agent-x1"'
SCHED = 'job="gleaner-scheduler",instance="10.0.0.9:8080",namespace="gleaner-system",pod="gleaner-scheduler-0"'
AGENT_LABELS = {"job": "gleaner-agent", "instance": "10.0.0.1:9316", "node": "n1",
                "namespace": "kube-system", "pod": "gleaner-agent-x1"}


def case(alert, series, eval_time, fires, value=None):
    """`fires`: label sets (without alertname/severity) expected at eval_time; [] = none."""
    return {"alert": alert, "series": series, "eval": eval_time, "fires": fires, "value": value}


CASES = [
    case("GleanerAgentDown", [("up{%s}" % AGENT, "0x10")], "6m", [AGENT_LABELS]),
    case("GleanerAgentDown", [("up{%s}" % AGENT, "1x10")], "6m", []),
    case("GleanerSamplingStalled", [("gleaner_last_sample_timestamp_seconds{%s}" % AGENT, "0x10")],
         "6m", [AGENT_LABELS]),
    case("GleanerSamplingStalled",
         [("gleaner_last_sample_timestamp_seconds{%s}" % AGENT, "0+60x10")], "6m", []),
    case("GleanerColocationDegraded",
         [('gleaner_colocation_state{%s,state="degraded"}' % AGENT, "1x15")], "11m",
         [dict(AGENT_LABELS, state="degraded")]),
    case("GleanerColocationDegraded",
         [('gleaner_colocation_state{%s,state="degraded"}' % AGENT, "0x15")], "11m", []),
    case("GleanerReportsFailing",
         [("gleaner_report_send_failures_total{%s}" % AGENT, "0+1x20"),
          ("gleaner_report_sends_total{%s}" % AGENT, "5x20")], "16m", [AGENT_LABELS]),
    case("GleanerReportsFailing",
         [("gleaner_report_send_failures_total{%s}" % AGENT, "0+1x20"),
          ("gleaner_report_sends_total{%s}" % AGENT, "0+4x20")], "16m", []),
    case("GleanerCgroupWriteFailures",
         [('gleaner_cgroup_write_failures_total{%s,resource="cpu.cfs_quota_us"}' % AGENT,
           "0+1x30")], "25m", [{"instance": "10.0.0.1:9316", "resource": "cpu.cfs_quota_us"}]),
    case("GleanerCgroupWriteFailures",
         [('gleaner_cgroup_write_failures_total{%s,resource="cpu.cfs_quota_us"}' % AGENT,
           "2x30")], "25m", []),
    case("GleanerStateFileErrors",
         [("gleaner_agent_state_file_errors_total{%s}" % AGENT, "0 0 0 1 1 1 1")], "5m",
         [AGENT_LABELS]),
    case("GleanerStateFileErrors",
         [("gleaner_agent_state_file_errors_total{%s}" % AGENT, "0x6")], "5m", []),
    # The first error of a key: the counter exists at 0 from the agent's start.
    case("GleanerConfigLoadErrors",
         [('gleaner_config_load_errors_total{%s,key="colocation-config"}' % AGENT,
           "0 0 0 1 1 1 1")], "5m", [dict(AGENT_LABELS, key="colocation-config")]),
    case("GleanerConfigLoadErrors",
         [('gleaner_config_load_errors_total{%s,key="colocation-config"}' % AGENT, "0x6")],
         "5m", []),
    # Issue #60: a key rejected from the agent's start, its counter 1 from the first scrape
    # and never again (no reload): the gauge fires for it.
    case("GleanerConfigLoadErrors",
         [('gleaner_config_load_errors_total{%s,key="resource-threshold-config"}' % AGENT, "1x20"),
          ('gleaner_config_key_valid{%s,key="resource-threshold-config"}' % AGENT, "0x20")],
         "15m", [dict(AGENT_LABELS, key="resource-threshold-config")]),
    # Rejected, then fixed: quiet once the counter's increase leaves the window.
    case("GleanerConfigLoadErrors",
         [('gleaner_config_load_errors_total{%s,key="resource-threshold-config"}' % AGENT, "1x30"),
          ('gleaner_config_key_valid{%s,key="resource-threshold-config"}' % AGENT,
           "0 0 0 0 0 1x25")], "25m", []),
    case("GleanerEvictionStorm", [("gleaner_evictions_total{%s}" % AGENT, "0+3x20")], "15m",
         [{"instance": "10.0.0.1:9316"}]),
    case("GleanerEvictionStorm", [("gleaner_evictions_total{%s}" % AGENT, "0+0.5x20")], "15m",
         []),
    case("GleanerLSRunqueueLatencyHigh",
         [('gleaner_pod_runqueue_latency_p99_seconds{instance="10.0.0.1:9316",namespace="web",'
           'pod="api-1",qos="LS"}', "0.01x20")], "12m",
         [{"instance": "10.0.0.1:9316", "namespace": "web", "pod": "api-1"}]),
    case("GleanerLSRunqueueLatencyHigh",
         [('gleaner_pod_runqueue_latency_p99_seconds{instance="10.0.0.1:9316",namespace="spark",'
           'pod="exec-1",qos="BE"}', "0.01x20")], "12m", []),
    case("GleanerSamplingSlow",
         [('gleaner_sampling_pass_duration_seconds_bucket{%s,le="0.1"}' % AGENT, "0x40"),
          ('gleaner_sampling_pass_duration_seconds_bucket{%s,le="1"}' % AGENT, "0+10x40"),
          ('gleaner_sampling_pass_duration_seconds_bucket{%s,le="+Inf"}' % AGENT, "0+10x40")],
         "30m", [{"instance": "10.0.0.1:9316"}]),
    case("GleanerSamplingSlow",
         [('gleaner_sampling_pass_duration_seconds_bucket{%s,le="0.1"}' % AGENT, "0+10x40"),
          ('gleaner_sampling_pass_duration_seconds_bucket{%s,le="1"}' % AGENT, "0+10x40"),
          ('gleaner_sampling_pass_duration_seconds_bucket{%s,le="+Inf"}' % AGENT, "0+10x40")],
         "30m", []),
    case("GleanerAgentMemoryHigh",
         [("gleaner_agent_resident_memory_bytes{%s}" % AGENT, "%dx20" % (120 << 20))], "20m",
         [AGENT_LABELS]),
    case("GleanerAgentMemoryHigh",
         [("gleaner_agent_resident_memory_bytes{%s}" % AGENT, "%dx20" % (20 << 20))], "20m", []),
    case("GleanerSchedulerDown", [("up{%s}" % SCHED, "0x10")], "6m",
         [{"job": "gleaner-scheduler", "instance": "10.0.0.9:8080",
           "namespace": "gleaner-system", "pod": "gleaner-scheduler-0"}]),
    case("GleanerSchedulerDown", [("up{%s}" % AGENT, "1x10")], "6m",
         [{"job": "gleaner-scheduler"}]),  # not scraped at all
    case("GleanerSchedulerDown", [("up{%s}" % SCHED, "1x10")], "6m", []),
    case("GleanerSchedulerNoLeader",
         [("gleaner_scheduler_leader{%s}" % SCHED, "0x10"),
          ('gleaner_scheduler_leader{%s}' % SCHED.replace("scheduler-0", "scheduler-1"), "0x10")],
         "5m", [{}]),
    case("GleanerSchedulerNoLeader",
         [("gleaner_scheduler_leader{%s}" % SCHED, "1x10"),
          ('gleaner_scheduler_leader{%s}' % SCHED.replace("scheduler-0", "scheduler-1"), "0x10")],
         "5m", []),
    case("GleanerSchedulerBindErrors",
         [('gleaner_scheduler_bindings_total{%s,result="error"}' % SCHED, "0+1x30")], "20m", [{}]),
    case("GleanerSchedulerBindErrors",
         [('gleaner_scheduler_bindings_total{%s,result="ok"}' % SCHED, "0+1x30"),
          ('gleaner_scheduler_bindings_total{%s,result="error"}' % SCHED, "0x30")], "20m", []),
    case("GleanerGangPartlyBound",
         [("gleaner_scheduler_oldest_partial_gang_seconds{%s}" % SCHED, "0+60x30")], "25m",
         [{}]),
    case("GleanerGangPartlyBound",  # finished within the TTL, again and again: no alert
         [("gleaner_scheduler_oldest_partial_gang_seconds{%s}" % SCHED,
           "0 60 120 180 240 300 360 420 480 540 0 60 120 180 240 300 360 420 480 540 0x10")],
         "25m", []),
    case("GleanerTokenReviewFailing",
         [('gleaner_scheduler_token_reviews_total{%s,outcome="error"}' % SCHED, "0+1x30")],
         "20m", [{}]),
    case("GleanerTokenReviewFailing",
         [('gleaner_scheduler_token_reviews_total{%s,outcome="authenticated"}' % SCHED, "0+1x30"),
          ('gleaner_scheduler_token_reviews_total{%s,outcome="error"}' % SCHED, "0x30")],
         "20m", []),
    case("GleanerReportForbidden",
         [('gleaner_scheduler_reports_rejected_total{%s,reason="forbidden"}' % SCHED,
           "0 0 1 1 1")], "3m", [{}]),
    case("GleanerReportForbidden",
         [('gleaner_scheduler_reports_rejected_total{%s,reason="forbidden"}' % SCHED, "0x4"),
          ('gleaner_scheduler_reports_rejected_total{%s,reason="malformed"}' % SCHED,
           "0 1 2 3 4")], "3m", []),
    case("GleanerReportsRefused",
         [('gleaner_scheduler_reports_rejected_total{%s,reason="unknown_cluster"}' % SCHED,
           "0+2x30")], "20m", [{"reason": "unknown_cluster"}]),
    case("GleanerReportsRefused",
         [('gleaner_scheduler_reports_rejected_total{%s,reason="replayed"}' % SCHED,
           "0+1x30")], "20m", [{"reason": "replayed"}]),
    case("GleanerReportsRefused",
         [('gleaner_scheduler_reports_rejected_total{%s,reason="unknown_cluster"}' % SCHED, "3x30"),
          ('gleaner_scheduler_reports_rejected_total{%s,reason="out_of_order"}' % SCHED,
           "0+1x30")], "20m", []),
    case("GleanerNodesNotReporting",
         [('gleaner_scheduler_nodes{%s,health="stale"}' % SCHED, "2x30"),
          ('gleaner_scheduler_nodes{%s,health="fresh"}' % SCHED, "5x30")], "20m",
         [{"health": "stale"}], value="2"),
    case("GleanerNodesNotReporting",
         [('gleaner_scheduler_nodes{%s,health="stale"}' % SCHED, "0x30"),
          ('gleaner_scheduler_nodes{%s,health="fresh"}' % SCHED, "5x30")], "20m", []),
    case("GleanerJobsPendingLong",
         [("gleaner_scheduler_pending_jobs{%s}" % SCHED, "3x70"),
          ("gleaner_scheduler_placements_total{%s}" % SCHED, "4x70")], "65m",
         [{"job": "gleaner-scheduler", "instance": "10.0.0.9:8080",
           "namespace": "gleaner-system", "pod": "gleaner-scheduler-0"}], value="3"),
    case("GleanerJobsPendingLong",
         [("gleaner_scheduler_pending_jobs{%s}" % SCHED, "3x70"),
          ("gleaner_scheduler_placements_total{%s}" % SCHED, "0+1x70")], "65m", []),
    case("GleanerWebhookFailing",
         [('gleaner_scheduler_webhook_reviews_total{%s,outcome="not_ready"}' % SCHED, "0+1x20")],
         "15m", [{}]),
    case("GleanerWebhookFailing",
         [('gleaner_scheduler_webhook_reviews_total{%s,outcome="mutated"}' % SCHED, "0+1x20"),
          ('gleaner_scheduler_webhook_reviews_total{%s,outcome="not_ready"}' % SCHED, "0x20")],
         "15m", []),
    case("GleanerInvalidQuotaOrProfile",
         [("gleaner_scheduler_quota_trees_rejected_total{%s}" % SCHED, "0 0 1 1 1")], "3m", [{}]),
    case("GleanerInvalidQuotaOrProfile",
         [("gleaner_scheduler_quota_trees_rejected_total{%s}" % SCHED, "0x4")], "3m", []),
    case("GleanerInvalidPropagationPolicy",
         [("gleaner_scheduler_propagation_policies_rejected_total{%s}" % SCHED, "0 0 1 1 1")],
         "3m", [{}]),
    case("GleanerInvalidPropagationPolicy",
         [("gleaner_scheduler_propagation_policies_rejected_total{%s}" % SCHED, "0x4")], "3m", []),
    case("GleanerFleetStepsFailing",
         [('gleaner_scheduler_fleet_retries_total{%s,step="place"}' % SCHED, "0+12x30")],
         "20m", [{"step": "place"}], value="180"),
    case("GleanerFleetStepsFailing",
         [('gleaner_scheduler_fleet_retries_total{%s,step="place"}' % SCHED, "0+1x30")],
         "20m", []),
    case("GleanerInvalidMemberCluster",
         [("gleaner_scheduler_member_clusters_rejected_total{%s}" % SCHED, "0 0 1 1 1")],
         "3m", [{}]),
    case("GleanerInvalidMemberCluster",
         [("gleaner_scheduler_member_clusters_rejected_total{%s}" % SCHED, "0x4")], "3m", []),
    case("GleanerInvalidHubJob",
         [("gleaner_scheduler_hub_jobs_rejected_total{%s}" % SCHED, "0 0 1 1 1")],
         "3m", [{}]),
    case("GleanerInvalidHubJob",
         [("gleaner_scheduler_hub_jobs_rejected_total{%s}" % SCHED, "0x4")], "3m", []),
]


def fill(template, labels, value):
    out = re.sub(r"\{\{\s*\$labels\.(\w+)\s*\}\}", lambda m: labels.get(m.group(1), ""), template)
    return re.sub(r"\{\{\s*\$value\s*\}\}", lambda m: value or "", out)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--promtool", default="/usr/bin/promtool")
    o = ap.parse_args()
    if not os.access(o.promtool, os.X_OK):
        print("SKIP: no promtool (Debian package prometheus)")
        return 77
    with open(RULES) as f:
        rules = {r["alert"]: r for g in yaml.safe_load(f)["groups"] for r in g["rules"]}
    covered = {c["alert"] for c in CASES}
    missing = sorted(set(rules) - covered)
    if missing:
        print("FAIL: alerts without a test case: %s" % ", ".join(missing))
        return 1
    for name in rules:
        kinds = {bool(c["fires"]) for c in CASES if c["alert"] == name}
        if kinds != {True, False}:
            print("FAIL: %s needs a case where it fires and one where it does not" % name)
            return 1
    tests = []
    for c in CASES:
        rule = rules[c["alert"]]
        exp = []
        for labels in c["fires"]:
            full = dict(labels, **rule.get("labels", {}))
            exp.append({"exp_labels": full,
                        "exp_annotations": {k: fill(v, labels, c["value"])
                                            for k, v in rule.get("annotations", {}).items()}})
        tests.append({"interval": "1m",
                      "input_series": [{"series": s, "values": v} for s, v in c["series"]],
                      "alert_rule_test": [{"eval_time": c["eval"], "alertname": c["alert"],
                                           "exp_alerts": exp}]})
    with tempfile.TemporaryDirectory(prefix="gleaner-alerts-") as tmp:
        path = os.path.join(tmp, "alerts_test.yaml")
        with open(path, "w") as f:
            yaml.safe_dump({"rule_files": [os.path.abspath(RULES)], "evaluation_interval": "1m",
                            "tests": tests}, f, sort_keys=False)
        r = subprocess.run([o.promtool, "test", "rules", path], capture_output=True, text=True,
                           timeout=120)
        print(r.stdout[-6000:], r.stderr[-3000:])
        if r.returncode != 0:
            return 1
    print("%d cases over %d alerts passed" % (len(CASES), len(rules)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
