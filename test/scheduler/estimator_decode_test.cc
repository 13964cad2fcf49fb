// Karmada's estimator requests in the core's terms: both encodings of Karmada's versions,
// batch and plain resources, tolerations and affinity from Kubernetes' protobuf bytes, no
// opinion where Gleaner does not model the request, and errors naming the field.
#include <gtest/gtest.h>

#include "common/quantity.h"
#include "kube_wire.pb.h"
#include "scheduler/estimator/request_decode.h"

namespace gleaner::scheduler::estimator {
namespace {

using gleaner::kGi;

std::string quantity(const std::string& text) {
  gleaner::kubewire::Quantity q;
  q.set_string(text);
  return q.SerializeAsString();
}

pb::MaxAvailableReplicasRequest replicas(const std::string& priority,
                                         std::map<std::string, std::string> requests,
                                         bool legacy = false) {
  pb::MaxAvailableReplicasRequest r;
  r.set_cluster("m");
  r.mutable_replicarequirements()->set_priorityclassname(priority);
  auto* map = legacy ? r.mutable_replicarequirements()->mutable_legacyresourcerequest()
                     : r.mutable_replicarequirements()->mutable_resourcerequestbytes();
  for (const auto& [k, v] : requests)
    (*map)[k] = quantity(v);
  return r;
}

TEST(EstimatorDecode, BothEncodingsAndBatchResources) {
  for (bool legacy : {false, true}) {
    auto d = decode(
        replicas("koord-batch", {{"cpu", "1500m"}, {"memory", "2Gi"}, {"pods", "1"}}, legacy), {});
    ASSERT_TRUE(d.ok()) << d.error().message;
    EXPECT_TRUE(d->no_opinion.empty()) << d->no_opinion;
    ASSERT_EQ(d->set.size(), 1U);
    EXPECT_EQ(d->set[0].batch, (Resources{1500, 2 * kGi}));
  }
  // Batch resources count whatever the class: batch-cpu is in millicores.
  auto d = decode(replicas("", {{"kubernetes.io/batch-cpu", "2000"},
                                {"kubernetes.io/batch-memory", "1073741824"}}),
                  {});
  ASSERT_TRUE(d.ok());
  EXPECT_TRUE(d->no_opinion.empty());
  EXPECT_EQ(d->set[0].batch, (Resources{2000, kGi}));
}

TEST(EstimatorDecode, NoOpinionOnWhatIsNotModelled) {
  EXPECT_NE(decode(replicas("koord-prod", {{"cpu", "1"}}), {})->no_opinion.find("koord-prod"),
            std::string::npos);
  EXPECT_NE(decode(replicas("koord-batch", {{"nvidia.com/gpu", "1"}}), {})->no_opinion, "");
  DecodePolicy own;
  own.batch_classes = {"spark-low"};
  EXPECT_EQ(decode(replicas("spark-low", {{"cpu", "1"}}), own)->no_opinion, "");
}

TEST(EstimatorDecode, AffinityAndTolerationsFromKubernetesBytes) {
  auto r = replicas("koord-batch", {{"cpu", "1"}});
  auto* claim = r.mutable_replicarequirements()->mutable_nodeclaim();
  (*claim->mutable_nodeselector())["pool"] = "spark";
  gleaner::kubewire::NodeSelector affinity;
  auto* e = affinity.add_nodeselectorterms()->add_matchexpressions();
  e->set_key("zone");
  e->set_operator_("In");
  e->add_values("a");
  claim->set_nodeaffinitybytes(affinity.SerializeAsString());
  gleaner::kubewire::Toleration t;
  t.set_key("spot");
  t.set_operator_("Exists");
  t.set_effect("NoSchedule");
  claim->add_tolerationsbytes(t.SerializeAsString());
  auto d = decode(r, {});
  ASSERT_TRUE(d.ok()) << d.error().message;
  const NodeSelector& s = d->set[0].selector;
  EXPECT_EQ(s.labels, (Labels{{"pool", "spark"}}));
  EXPECT_TRUE(s.matches({{"pool", "spark"}, {"zone", "a"}}));
  EXPECT_FALSE(s.matches({{"pool", "spark"}, {"zone", "b"}}));
  EXPECT_TRUE(
      s.admits({{"pool", "spark"}, {"zone", "a"}}, {{"spot", "true", TaintEffect::kNoSchedule}}));
  EXPECT_FALSE(
      s.admits({{"pool", "spark"}, {"zone", "a"}}, {{"gpu", "true", TaintEffect::kNoSchedule}}));

  // matchFields (metadata.name) is not modelled: no opinion, naming it.
  auto* f = affinity.mutable_nodeselectorterms(0)->add_matchfields();
  f->set_key("metadata.name");
  f->set_operator_("In");
  f->add_values("n1");
  claim->set_nodeaffinitybytes(affinity.SerializeAsString());
  EXPECT_NE(decode(r, {})->no_opinion.find("matchFields"), std::string::npos);
}

// Gt and Lt read the node's label as an integer, as kube-scheduler's nodeaffinity does: the
// estimator answers for them instead of saying no opinion.
TEST(EstimatorDecode, GtAndLtCompareTheNodeLabelAsAnInteger) {
  auto r = replicas("koord-batch", {{"cpu", "1"}});
  auto* claim = r.mutable_replicarequirements()->mutable_nodeclaim();
  gleaner::kubewire::NodeSelector affinity;
  auto* e = affinity.add_nodeselectorterms()->add_matchexpressions();
  e->set_key("gpu-count");
  e->set_operator_("Gt");
  e->add_values("1");
  claim->set_nodeaffinitybytes(affinity.SerializeAsString());
  auto gt = decode(r, {});
  ASSERT_TRUE(gt.ok()) << gt.error().message;
  EXPECT_EQ(gt->no_opinion, "");
  const NodeSelector& s = gt->set[0].selector;
  EXPECT_TRUE(s.matches({{"gpu-count", "2"}}));
  EXPECT_FALSE(s.matches({{"gpu-count", "1"}}));
  EXPECT_FALSE(s.matches({{"gpu-count", "8x"}}));
  EXPECT_FALSE(s.matches({}));

  e->set_operator_("Lt");
  claim->set_legacynodeaffinity(affinity.SerializeAsString());
  claim->clear_nodeaffinitybytes();
  auto lt = decode(r, {});
  ASSERT_TRUE(lt.ok()) << lt.error().message;
  EXPECT_TRUE(lt->set[0].selector.matches({{"gpu-count", "0"}}));
  EXPECT_FALSE(lt->set[0].selector.matches({{"gpu-count", "1"}}));
  EXPECT_FALSE(lt->set[0].selector.matches({}));
}

TEST(EstimatorDecode, MalformedGtOrLtIsAnErrorNamingTheField) {
  const std::string at =
      "replicaRequirements.nodeClaim.nodeAffinityBytes.nodeSelectorTerms[0]"
      ".matchExpressions[0]";
  for (const std::vector<std::string>& values : {std::vector<std::string>{}, {"1", "2"}, {"two"}}) {
    auto r = replicas("koord-batch", {{"cpu", "1"}});
    gleaner::kubewire::NodeSelector affinity;
    auto* e = affinity.add_nodeselectorterms()->add_matchexpressions();
    e->set_key("gpu-count");
    e->set_operator_("Lt");
    for (const auto& v : values)
      e->add_values(v);
    r.mutable_replicarequirements()->mutable_nodeclaim()->set_nodeaffinitybytes(
        affinity.SerializeAsString());
    auto d = decode(r, {});
    ASSERT_FALSE(d.ok()) << values.size() << " values";
    EXPECT_EQ(d.error().code, ErrorCode::kInvalidArgument);
    EXPECT_EQ(d.error().message.rfind(at + ".values", 0), 0u) << d.error().message;
  }
}

TEST(EstimatorDecode, BadInputNamesTheField) {
  auto bad = decode(replicas("koord-batch", {{"cpu", "1.5.5"}}), {});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("replicaRequirements[cpu]"), std::string::npos);
  auto r = replicas("koord-batch", {});
  (*r.mutable_replicarequirements()->mutable_resourcerequestbytes())["memory"] = "\xff\xff";
  EXPECT_FALSE(decode(r, {}).ok());

  pb::MaxAvailableComponentSetsRequest sets;
  sets.set_cluster("m");
  auto* c = sets.add_components();
  c->set_replicas(-1);
  auto negative = decode(sets, {});
  ASSERT_FALSE(negative.ok());
  EXPECT_NE(negative.error().message.find("components[0].replicas"), std::string::npos);
  DecodePolicy small;
  small.max_components = 2;
  c->set_replicas(1);
  sets.add_components();
  sets.add_components();
  EXPECT_FALSE(decode(sets, small).ok());
}

}  // namespace
}  // namespace gleaner::scheduler::estimator
