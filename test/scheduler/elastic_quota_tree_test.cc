// ElasticQuotaTree objects read as the quota tree, and a replaced tree in the core.
#include "scheduler/kube/elastic_quota_tree.h"

#include <gtest/gtest.h>

#include "common/json_util.h"
#include "common/quantity.h"
#include "scheduler/core/scheduler.h"

namespace gleaner::scheduler {
namespace {

using gleaner::kGi;

Json tree(const std::string& root) {
  Json t = Json::parse(R"({"metadata": {"name": "elasticquotatree", "namespace": "kube-system"}})");
  t["spec"]["root"] = Json::parse(root);
  return t;
}

TEST(ElasticQuotaTree, AckTreeBecomesQueuesWithNamespacesOnLeaves) {
  auto c = kube_glue::parse_elastic_quota_tree(tree(R"({
    "name": "root", "max": {"cpu": 40, "memory": "40Gi"}, "min": {"cpu": 40, "memory": "40Gi"},
    "children": [
      {"name": "root.a", "max": {"cpu": 40, "memory": "40Gi"}, "min": {"cpu": 20, "memory": "20Gi"},
       "children": [{"name": "root.a.1", "namespaces": ["spark", "etl"],
                     "max": {"cpu": "20", "memory": "40Gi", "nvidia.com/gpu": 2,
                             "example.com/fpga": 1},
                     "min": {"cpu": "10", "memory": "20Gi"}}]},
      {"name": "root.b", "max": {"kubernetes.io/batch-cpu": 8000}}]})"));
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->root_max, (Resources{40000, 40 * kGi, kGpusUnlimited}));
  ASSERT_EQ(c->queues.size(), 3u);
  EXPECT_EQ(c->queues[0].name, "root.a");
  EXPECT_EQ(c->queues[0].parent, "root");
  EXPECT_EQ(c->queues[1].parent, "root.a");
  EXPECT_EQ(c->queues[1].min, (Resources{10000, 20 * kGi}));
  EXPECT_EQ(c->queues[1].max->gpus, 2) << "GPUs are quota'd like cpu and memory";
  // A resource a node leaves out of max is unlimited.
  EXPECT_EQ(c->queues[2].max->cpu_milli, 8000);
  EXPECT_EQ(c->queues[2].max->memory_bytes, INT64_MAX);
  EXPECT_EQ(c->queues[2].max->gpus, kGpusUnlimited);
  EXPECT_EQ(c->namespace_queue.at("etl"), "root.a.1");
  ASSERT_EQ(c->warnings.size(), 1u);
  EXPECT_NE(c->warnings[0].find("example.com/fpga"), std::string::npos);
}

TEST(ElasticQuotaTree, AnAnnotationSetsQueuesBlockingOrNonBlocking) {
  Json t = tree(R"({"name": "root", "children": [{"name": "team-a"}, {"name": "team-b"},
                                                  {"name": "team-c"}]})");
  t["metadata"]["annotations"] = {
      {"gleaner.io/queueing", " team-a=blocking,team-b = nonblocking ,"}};
  auto c = kube_glue::parse_elastic_quota_tree(t);
  ASSERT_TRUE(c.ok()) << c.error().message;
  ASSERT_EQ(c->queues.size(), 3u);
  EXPECT_EQ(c->queues[0].queueing, QueueingPolicy::kBlocking);
  EXPECT_EQ(c->queues[1].queueing, QueueingPolicy::kNonBlocking);
  EXPECT_FALSE(c->queues[2].queueing.has_value()) << "unnamed: the scheduler-wide policy";
  // The core holds a blocking queue's later jobs behind one that does not fit.
  auto quotas = QuotaTree::build(c->queues, c->root_max);
  ASSERT_TRUE(quotas.ok());
  Scheduler s(SchedulerPolicy{}, *quotas, ClusterState());
  (void)*s.upsert_node(NodeInfo{"n1", "c1", {}, Resources{4000, 16 * kGi}}, 0);
  auto job = [&](const std::string& name, const std::string& queue, int64_t cpu, int64_t at) {
    JobSpec spec;
    spec.name = name;
    spec.queue = queue;
    spec.submit_time = at;
    spec.driver = Resources{cpu, kGi};
    return *s.submit(spec);
  };
  const JobId filler = job("filler", "team-c", 2000, 0);  // leaves 2 cores
  (void)s.schedule(0);
  ASSERT_EQ(s.job(filler).phase, JobPhase::kAdmitted);
  const JobId big_a = job("big-a", "team-a", 3000, 1);
  (void)s.schedule(1);
  ASSERT_EQ(s.job(big_a).phase, JobPhase::kPending);
  const JobId small_a = job("small-a", "team-a", 500, 2);
  const JobId small_b = job("small-b", "team-b", 500, 2);
  (void)s.schedule(2);
  EXPECT_EQ(s.job(small_a).phase, JobPhase::kPending) << "behind big-a in a blocking queue";
  EXPECT_EQ(s.job(small_b).phase, JobPhase::kAdmitted);

  for (const char* bad : {"team-a=fifo", "nobody=blocking", "team-a"}) {
    t["metadata"]["annotations"]["gleaner.io/queueing"] = bad;
    auto r = kube_glue::parse_elastic_quota_tree(t);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_NE(r.error().message.find("gleaner.io/queueing"), std::string::npos)
        << r.error().message;
  }
}

TEST(ElasticQuotaTree, BadTreesAreNamedByObjectAndNode) {
  struct Case {
    const char* root;
    const char* expect;
  };
  const Case cases[] = {
      {R"({"name": "root", "namespaces": ["x"]})", "only be set on leaves"},
      {R"({"name": "root", "children": [{"name": "a", "namespaces": ["x"]},
                                         {"name": "b", "namespaces": ["x"]}]})",
       "b: namespace x is already in a"},
      {R"({"name": "root", "children": [{"name": "a"}, {"name": "a"}]})", "a: name used twice"},
      {R"({"name": "root", "children": [{"name": "a", "min": {"cpu": "lots"}}]})", "a.min.cpu"},
      {R"({"name": "root", "children": [{"name": "a", "min": {"cpu": 4}, "max": {"cpu": 2}}]})",
       "min"},
      {R"({"name": "root", "children": [{"max": {"cpu": 2}}]})", "name is missing"},
      {R"({"name": "root", "children": {"name": "a"}})", "children must be a list"},
  };
  for (const Case& c : cases) {
    auto r = kube_glue::parse_elastic_quota_tree(tree(c.root));
    ASSERT_FALSE(r.ok()) << c.root;
    EXPECT_NE(r.error().message.find("ElasticQuotaTree kube-system/elasticquotatree"),
              std::string::npos);
    EXPECT_NE(r.error().message.find(c.expect), std::string::npos) << r.error().message;
  }
  EXPECT_FALSE(kube_glue::parse_elastic_quota_tree(Json::parse(R"({"spec": {}})")).ok());
}

TEST(ElasticQuotaTree, EveryProblemOfABadTreeIsReportedAtOnce) {
  auto r = kube_glue::parse_elastic_quota_tree(tree(R"({"name": "root", "children": [
      {"name": "a", "min": {"cpu": "lots"}},
      {"name": "a"},
      {"name": "b", "children": [{"name": "b1", "max": {"memory": -1}}], "namespaces": ["x"]}]})"));
  ASSERT_FALSE(r.ok());
  const std::string& m = r.error().message;
  EXPECT_NE(m.find("ElasticQuotaTree kube-system/elasticquotatree: 4 problems: "),
            std::string::npos)
      << m;
  for (const char* each :
       {"a.min.cpu", "a: name used twice", "b: namespaces may only be set on leaves", "b1: max"})
    EXPECT_NE(m.find(each), std::string::npos) << each << " in " << m;
}

TEST(ElasticQuotaTree, ReplacedTreeKeepsJobsInTheirQueuesAndChargesAdmittedOnes) {
  auto first = QuotaTree::build({QueueSpec{"a", "root", std::nullopt, Resources{2000, 8 * kGi}}});
  ASSERT_TRUE(first.ok());
  Scheduler s({}, std::move(*first), ClusterState());
  ASSERT_TRUE(s.upsert_node(NodeInfo{"n1", "c1", {}, {8000, 64 * kGi}}, 0).ok());
  JobSpec small{"small", "a", 0, 0, {1000, kGi}, {}, 0, {}};
  JobSpec big{"big", "a", 0, 1, {2000, kGi}, {}, 0, {}};
  ASSERT_TRUE(s.submit(small).ok());
  ASSERT_TRUE(s.submit(big).ok());
  s.schedule(1);
  EXPECT_EQ(s.job(0).phase, JobPhase::kAdmitted);
  EXPECT_EQ(s.job(1).phase, JobPhase::kPending);  // 1 + 2 cores is above a's max of 2

  auto wider = QuotaTree::build({QueueSpec{"a", "root", std::nullopt, Resources{4000, 8 * kGi}}});
  ASSERT_TRUE(wider.ok());
  s.replace_quotas(std::move(*wider));
  const QueueId a = *s.quotas().find("a");
  EXPECT_EQ(s.quotas().queue(a).used.cpu_milli, 1000);  // the admitted job, charged again
  s.schedule(2);
  EXPECT_EQ(s.job(1).phase, JobPhase::kAdmitted);
  EXPECT_EQ(s.quotas().queue(a).used.cpu_milli, 3000);

  // A queue that goes: its jobs move to default.
  s.replace_quotas(*QuotaTree::build({}));
  EXPECT_EQ(s.quotas().queue(s.job(0).queue).name, "default");
  EXPECT_EQ(s.quotas().queue(s.job(0).queue).used.cpu_milli, 3000);
}

}  // namespace
}  // namespace gleaner::scheduler
