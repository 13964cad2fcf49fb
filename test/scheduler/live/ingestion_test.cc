// Report ingestion over loopback HTTP: bearer token, malformed and out-of-order reports,
// the size limit, and the read-only API reflecting what was accepted.
#include <gtest/gtest.h>

#include "kube/http_client.h"
#include "scheduler/admission/certificates.h"
#include "test/scheduler/live/report_endpoint.h"
#include "test/support/temp_tree.h"

namespace gleaner::scheduler::server {
namespace {

using live_testing::node_report;

class IngestionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_.write("token", "s3cret\n");
    api_.start(std::make_unique<ReportValidator>(dir_ / "token", 4096));
  }

  kube::HttpResponse send(const std::string& method, const std::string& target,
                          const std::string& body, const std::string& token = "s3cret") {
    return api_.send(method, target, body, token);
  }
  kube::HttpResponse post(const reporter::NodeReport& r, const std::string& token = "s3cret") {
    return send("POST", "/api/v1/reports", reporter::to_json_text(r), token);
  }

  gleaner::testing::TempDir dir_;
  live_testing::ReportEndpoint api_;
  LiveMetrics& metrics_ = api_.metrics();
  uint64_t sequence_ = 100;
};

TEST_F(IngestionTest, AcceptsAReportWithTheTokenAndShowsTheNode) {
  EXPECT_EQ(post(node_report("n1", 1, 4000, 8LL << 30)).status, 200);
  EXPECT_EQ(metrics_.reports_accepted(), 1u);
  auto nodes = Json::parse(send("GET", "/api/v1/nodes", "").body);
  ASSERT_EQ(nodes["nodes"].size(), 1u);
  EXPECT_EQ(nodes["nodes"][0]["name"], "n1");
  EXPECT_EQ(nodes["nodes"][0]["cluster"], "default");
  EXPECT_EQ(nodes["nodes"][0]["health"], "fresh");
  EXPECT_EQ(nodes["nodes"][0]["batch"]["cpuMillicores"], 4000);
}

TEST_F(IngestionTest, RefusesMissingOrWrongTokens) {
  EXPECT_EQ(post(node_report("n1", 1, 4000, 1 << 30), "").status, 401);
  EXPECT_EQ(post(node_report("n1", 1, 4000, 1 << 30), "wrong").status, 401);
  EXPECT_EQ(metrics_.reports_rejected(RejectReason::kUnauthorized), 2u);
  EXPECT_EQ(metrics_.reports_accepted(), 0u);
  // The token file is re-read when it changes.
  dir_.write("token", "rotated-token-value");
  EXPECT_EQ(post(node_report("n1", 1, 4000, 1 << 30), "rotated-token-value").status, 200);
}

TEST_F(IngestionTest, RejectsAndCountsMalformedReportsAndKeepsServing) {
  for (const char* body : {"{", "[]", "{\"version\":2}", "\x01\x02\xff", ""}) {
    EXPECT_EQ(send("POST", "/api/v1/reports", body).status, 400) << body;
  }
  Json wrong = reporter::to_json(node_report("n1", 1, 4000, 1 << 30));
  wrong["batchAllocatable"]["cpuMillicores"] = -5;
  EXPECT_EQ(send("POST", "/api/v1/reports", wrong.dump()).status, 400);
  EXPECT_EQ(metrics_.reports_rejected(RejectReason::kMalformed), 6u);
  EXPECT_EQ(post(node_report("n1", 1, 4000, 1 << 30)).status, 200);
  EXPECT_EQ(send("GET", "/healthz", "").status, 200);
}

TEST_F(IngestionTest, RejectsOutOfOrderSequencesButAcceptsARestartedAgent) {
  auto r5 = node_report("n1", 5, 4000, 1 << 30);
  EXPECT_EQ(post(r5).status, 200);
  auto r4 = r5;
  r4.sequence = 4;
  r4.timestamp_unix_ms -= 1000;
  EXPECT_EQ(post(r4).status, 409);
  EXPECT_EQ(metrics_.reports_rejected(RejectReason::kOutOfOrder), 1u);
  EXPECT_EQ(post(r5).status, 200);  // a retry of the last one: acknowledged, not applied
  EXPECT_EQ(metrics_.reports_accepted(), 1u);
  auto restarted = r5;  // new agent process: sequence from 0, newer sample
  restarted.sequence = 0;
  restarted.timestamp_unix_ms += 1000;
  restarted.batch_allocatable->cpu_millicores = 2000;
  EXPECT_EQ(post(restarted).status, 200);
  auto nodes = Json::parse(send("GET", "/api/v1/nodes", "").body);
  EXPECT_EQ(nodes["nodes"][0]["batch"]["cpuMillicores"], 2000);
}

TEST_F(IngestionTest, ARestartedAgentIsKnownByItsEpochNotItsSequence) {
  auto before = node_report("n1", 7, 4000, 1 << 30);
  before.epoch = "aaaaaaaaaaaaaaaa";
  EXPECT_EQ(post(before).status, 200);
  // The restarted agent counts from 1 again: its new epoch and later sample say restart.
  auto restarted = node_report("n1", 1, 2000, 1 << 30);
  restarted.epoch = "bbbbbbbbbbbbbbbb";
  restarted.timestamp_unix_ms = before.timestamp_unix_ms + 1000;
  EXPECT_EQ(post(restarted).status, 200);
  restarted.sequence = 2;
  EXPECT_EQ(post(restarted).status, 200);
  // One forged report with the largest sequence does not lock the node out either: the
  // running agent's epoch goes on past its own last sequence.
  auto forged = restarted;
  forged.epoch = "cccccccccccccccc";
  forged.sequence = INT64_MAX;
  forged.timestamp_unix_ms += 1;
  EXPECT_EQ(post(forged).status, 200);
  restarted.sequence = 3;
  EXPECT_EQ(post(restarted).status, 200);
  // Within one epoch the order still holds.
  restarted.sequence = 2;
  EXPECT_EQ(post(restarted).status, 409);
}

TEST_F(IngestionTest, AnAgentWhoseClockRanAheadIsTakenBackAfterItsRestart) {
  // The old process stamped its samples two minutes ahead (within the allowed skew); the
  // restarted one has a correct clock: accepted at once, not once the clock catches up.
  auto ahead = node_report("n1", 7, 4000, 1 << 30);
  ahead.epoch = "aaaaaaaaaaaaaaaa";
  ahead.timestamp_unix_ms += 120 * 1000;
  EXPECT_EQ(post(ahead).status, 200);
  auto restarted = node_report("n1", 1, 2000, 1 << 30);
  restarted.epoch = "bbbbbbbbbbbbbbbb";
  restarted.timestamp_unix_ms += 5;  // a restart takes longer than the old report's arrival
  EXPECT_EQ(post(restarted).status, 200);
}

TEST_F(IngestionTest, AReplayedReportOfAnEarlierEpochIsRefusedAndCounted) {
  auto old_run = node_report("n1", 3, 7000, 1 << 30);
  old_run.epoch = "aaaaaaaaaaaaaaaa";
  EXPECT_EQ(post(old_run).status, 200);
  auto restarted = node_report("n1", 1, 2000, 1 << 30);
  restarted.epoch = "bbbbbbbbbbbbbbbb";
  restarted.timestamp_unix_ms = old_run.timestamp_unix_ms + 1000;
  EXPECT_EQ(post(restarted).status, 200);
  // The old process's report sent again: its epoch is remembered, its sequence is spent.
  auto replay = post(old_run);
  EXPECT_EQ(replay.status, 409);
  EXPECT_NE(replay.body.find("replayed"), std::string::npos) << replay.body;
  EXPECT_EQ(metrics_.reports_rejected(RejectReason::kReplayed), 1u);
  auto nodes = Json::parse(send("GET", "/api/v1/nodes", "").body);
  EXPECT_EQ(nodes["nodes"][0]["batch"]["cpuMillicores"], 2000) << "the replay must not apply";
  // An epoch never seen, but with a sample older than the last accepted: not a restart.
  auto stale = old_run;
  stale.epoch = "dddddddddddddddd";
  EXPECT_EQ(post(stale).status, 409);
  EXPECT_EQ(metrics_.reports_rejected(RejectReason::kReplayed), 2u);
  // An epoch never seen with a sample from long ago (its epoch forgotten): not after the
  // node's last accepted report either. (A node's first report is not judged by the
  // scheduler's clock any more, so it is n1's, whose reports order it, that is refused.)
  auto ancient = node_report("n1", 9, 7000, 1 << 30);
  ancient.epoch = "eeeeeeeeeeeeeeee";
  ancient.timestamp_unix_ms -= 6 * 60 * 1000;
  EXPECT_EQ(post(ancient).status, 409);
  EXPECT_EQ(metrics_.reports_rejected(RejectReason::kReplayed), 3u);
  // The running agent goes on.
  restarted.sequence = 2;
  EXPECT_EQ(post(restarted).status, 200);
}

TEST_F(IngestionTest, ANodeWhoseClockIsMinutesOffReportsRestartsAndIsStillGuardedAgainstReplays) {
  // kubelet works with any node clock: six minutes ahead or behind, the node's reports are
  // taken, across a restart of its agent too; replays are ordered against its own reports.
  int n = 0;
  for (const int64_t off_ms : {int64_t{6 * 60 * 1000}, int64_t{-6 * 60 * 1000}}) {
    const std::string node = "skewed-" + std::to_string(n++);
    auto first = node_report(node, 1, 4000, 1 << 30);
    first.epoch = "aaaaaaaaaaaaaaaa";
    first.timestamp_unix_ms += off_ms;
    EXPECT_EQ(post(first).status, 200) << off_ms;
    auto next = first;
    next.sequence = 2;
    next.timestamp_unix_ms += 1000;
    EXPECT_EQ(post(next).status, 200) << off_ms;
    auto restarted = node_report(node, 1, 3000, 1 << 30);
    restarted.epoch = "bbbbbbbbbbbbbbbb";
    restarted.timestamp_unix_ms = next.timestamp_unix_ms + 1000;
    EXPECT_EQ(post(restarted).status, 200) << off_ms;
    // The old process's report again: its epoch is remembered, its sequence spent.
    EXPECT_EQ(post(first).status, 409) << off_ms;
    // A sample from before the node's last report (by its clock) and before that report
    // arrived (by ours), under an epoch never seen: not a restart. (One between the two
    // is taken: the old process's clock may have run ahead, wire-format.md.)
    auto stale = first;
    stale.epoch = "cccccccccccccccc";
    stale.timestamp_unix_ms -= 7 * 60 * 1000;
    EXPECT_EQ(post(stale).status, 409) << off_ms;
  }
  EXPECT_EQ(metrics_.reports_rejected(RejectReason::kReplayed), 4u);
  EXPECT_EQ(metrics_.reports_rejected(RejectReason::kClockSkew), 0u);
}

TEST_F(IngestionTest, ANodesSequenceIsOneWhateverNameItsAgentGivesTheDefaultCluster) {
  auto named = node_report("n1", 5, 4000, 1 << 30, "default");
  named.epoch = "aaaaaaaaaaaaaaaa";
  EXPECT_EQ(post(named).status, 200);
  auto unnamed = named;  // the same agent process, its cluster left empty
  unnamed.cluster = "";
  unnamed.sequence = 4;
  unnamed.timestamp_unix_ms += 1000;
  unnamed.batch_allocatable->cpu_millicores = 9000;
  EXPECT_EQ(post(unnamed).status, 409);
  EXPECT_EQ(metrics_.reports_rejected(RejectReason::kOutOfOrder), 1u);
  auto nodes = Json::parse(send("GET", "/api/v1/nodes", "").body);
  ASSERT_EQ(nodes["nodes"].size(), 1u);
  EXPECT_EQ(nodes["nodes"][0]["batch"]["cpuMillicores"], 4000);
}

class ManagedClusterIngestionTest : public IngestionTest {
 protected:
  void SetUp() override {
    dir_.write("token", "s3cret\n");
    gang::GangOptions options;
    options.clusters = {"c1"};
    api_.start(std::make_unique<ReportValidator>(dir_ / "token", 4096), options);
  }
};

TEST_F(ManagedClusterIngestionTest, AReportForAnotherClusterIsRefusedEveryTimeItIsSent) {
  // An agent started with the wrong --cluster: each send (a retry of the same report
  // included) is refused, so the agent counts failures, never a delivered report.
  auto wrong = node_report("n1", 1, 4000, 1 << 30, "default");
  for (int attempt = 0; attempt < 3; ++attempt) {
    auto answer = post(wrong);
    EXPECT_EQ(answer.status, 422) << "attempt " << attempt << ": " << answer.body;
  }
  EXPECT_EQ(metrics_.reports_rejected(RejectReason::kUnknownCluster), 3u);
  EXPECT_EQ(metrics_.reports_accepted(), 0u);
  // Its own cluster's name, or none (one managed cluster), is the same node.
  auto own = node_report("n1", 2, 4000, 1 << 30, "c1");
  EXPECT_EQ(post(own).status, 200);
  auto unnamed = own;
  unnamed.cluster = "";
  EXPECT_EQ(post(unnamed).status, 200) << "a retry of the same report, under either name";
  EXPECT_EQ(metrics_.reports_accepted(), 1u);
}

TEST_F(IngestionTest, NamesThatAreNotKubernetesNamesAreRefused) {
  for (const std::string& node :
       {std::string(600, 'a'), std::string("n\0ul", 4), std::string("N1"), std::string("n/1")}) {
    auto r = node_report(node, 1, 4000, 1 << 30);
    EXPECT_EQ(post(r).status, 400) << node.size();
  }
  auto long_cluster = node_report("n1", 1, 4000, 1 << 30, std::string(64, 'c'));
  EXPECT_EQ(post(long_cluster).status, 400);
  EXPECT_EQ(metrics_.reports_accepted(), 0u);
}

TEST_F(IngestionTest, BytesThatAreNotUtf8GetAnAnswerNotADroppedConnection) {
  const std::string body = "{\"version\": 1, \"node\": \"\xff\xfe\"}";
  auto r = send("POST", "/api/v1/reports", body);
  EXPECT_EQ(r.status, 400);
  auto path = send("GET", "/api/v1/\xff\xfe", "");
  EXPECT_EQ(path.status, 404);
  EXPECT_TRUE(Json::accept(path.body)) << path.body;
}

TEST_F(IngestionTest, OversizedHeadersAreAnswered431) {
  kube::HttpConnection conn(net::HttpUrl{"http", "127.0.0.1", api_.server()->port()}, {});
  net::ClientRequest req{"GET", "/healthz", {{"X-Padding", std::string(20000, 'x')}}, ""};
  auto resp = conn.request(req, {});
  ASSERT_TRUE(resp.ok()) << resp.error().message;
  EXPECT_EQ(resp->status, 431);
}

TEST_F(IngestionTest, ReportsOverTlsAreVerifiedAgainstTheServingCertificatesCa) {
  const auto now = std::chrono::system_clock::now();
  auto ca = admission::make_ca("test-ca", now, std::chrono::hours(24));
  ASSERT_TRUE(ca.ok());
  auto pair = admission::make_serving_cert(*ca, {"localhost"}, now, std::chrono::hours(24));
  ASSERT_TRUE(pair.ok());
  auto https = SchedulerPort::create(api_.io(), "127.0.0.1:0", api_.routes(), &*pair);
  ASSERT_TRUE(https.ok()) << https.error().message;
  auto post_tls = [&](const std::string& ca_pem) {
    kube::TlsOptions tls;
    tls.ca_pem = ca_pem;
    kube::HttpConnection conn(net::HttpUrl{"https", "localhost", (*https)->port()}, tls);
    net::ClientRequest req{
        "POST",
        "/api/v1/reports",
        {{"Content-Type", "application/json"}, {"Authorization", "Bearer s3cret"}},
        reporter::to_json_text(node_report("n1", ++sequence_, 4000, 1 << 30))};
    return conn.request(req, {});
  };
  auto ok = post_tls(ca->cert_pem);
  ASSERT_TRUE(ok.ok()) << ok.error().message;
  EXPECT_EQ(ok->status, 200);
  // A client that trusts another CA does not talk to it.
  auto other = admission::make_ca("other", now, std::chrono::hours(24));
  ASSERT_TRUE(other.ok());
  EXPECT_FALSE(post_tls(other->cert_pem).ok());
  // A new certificate (from the other CA) is served to new connections.
  auto renewed = admission::make_serving_cert(*other, {"localhost"}, now, std::chrono::hours(24));
  ASSERT_TRUE(renewed.ok());
  ASSERT_TRUE((*https)->set_certificate(*renewed).ok());
  auto after = post_tls(other->cert_pem);
  ASSERT_TRUE(after.ok()) << after.error().message;
  EXPECT_EQ(after->status, 200);
  (*https)->stop();
}

TEST_F(IngestionTest, RefusesBodiesAboveTheLimit) {
  auto r = node_report("n1", 1, 4000, 1 << 30);
  for (int i = 0; i < 100; ++i)
    r.be_pods.push_back({{"ns", "pod-with-a-long-name-" + std::to_string(i), "uid"}, {1, 1}});
  ASSERT_GT(reporter::to_json_text(r).size(), 4096u);
  EXPECT_EQ(post(r).status, 413);
  EXPECT_EQ(metrics_.reports_rejected(RejectReason::kTooLarge), 1u);
  EXPECT_EQ(metrics_.reports_accepted(), 0u);
}

TEST_F(IngestionTest, ServesTheReadOnlyApiAndMetrics) {
  ASSERT_EQ(post(node_report("n1", 1, 4000, 1 << 30)).status, 200);
  auto queues = Json::parse(send("GET", "/api/v1/queues", "").body);
  EXPECT_EQ(queues["queues"][0]["name"], "root");
  auto jobs = Json::parse(send("GET", "/api/v1/jobs", "").body);
  EXPECT_TRUE(jobs["jobs"].empty());
  auto metrics = send("GET", "/metrics", "");
  EXPECT_EQ(metrics.status, 200);
  EXPECT_NE(metrics.body.find("gleaner_scheduler_reports_accepted_total 1\n"), std::string::npos);
  EXPECT_NE(metrics.body.find("gleaner_scheduler_nodes{health=\"fresh\"} 1\n"), std::string::npos);
  EXPECT_EQ(send("GET", "/nope", "").status, 404);
  EXPECT_EQ(send("DELETE", "/api/v1/nodes", "").status, 405);
  EXPECT_EQ(send("GET", "/api/v1/reports", "").status, 405);
}

}  // namespace
}  // namespace gleaner::scheduler::server
