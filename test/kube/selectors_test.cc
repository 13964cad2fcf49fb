#include "kube/selectors.h"

#include <gtest/gtest.h>

#include "common/json_util.h"

namespace gleaner::kube {
namespace {

LabelSelector sel(const char* text) {
  auto s = LabelSelector::parse(text);
  EXPECT_TRUE(s.ok()) << text << ": " << (s.ok() ? "" : s.error().message);
  return s.ok() ? *s : LabelSelector();
}

TEST(LabelSelector, EqualityAndInequality) {
  const Labels web{{"app", "web"}, {"tier", "online"}};
  EXPECT_TRUE(sel("app=web").matches(web));
  EXPECT_TRUE(sel("app==web,tier=online").matches(web));
  EXPECT_FALSE(sel("app=db").matches(web));
  EXPECT_TRUE(sel("app!=db").matches(web));
  EXPECT_FALSE(sel("tier!=online").matches(web));
  EXPECT_TRUE(sel("missing!=x").matches(web));  // != also matches objects without the label
}

TEST(LabelSelector, SetBasedAndExistence) {
  const Labels batch{{"kubernetes.io/role", "batch"}, {"queue", "spark"}};
  EXPECT_TRUE(sel("queue in (spark, flink)").matches(batch));
  EXPECT_FALSE(sel("queue notin (spark)").matches(batch));
  EXPECT_TRUE(sel("kubernetes.io/role").matches(batch));
  EXPECT_FALSE(sel("!kubernetes.io/role").matches(batch));
  EXPECT_TRUE(sel("!gpu,queue in (a,spark)").matches(batch));
  EXPECT_TRUE(sel("").matches(batch));
}

TEST(LabelSelector, RejectsMalformedText) {
  for (const char* bad : {"app=", "=web", "app in spark", "app in (a", "a,,b", "app=w@b", "-bad=1",
                          "app in (a)) ", "app ~ x"}) {
    if (std::string(bad) == "app=") continue;  // an empty value is legal: "app="
    auto s = LabelSelector::parse(bad);
    EXPECT_FALSE(s.ok()) << bad;
    if (!s.ok()) {
      EXPECT_NE(s.error().message.find("label selector"), std::string::npos);
    }
  }
  EXPECT_TRUE(LabelSelector::parse("app=").ok());
}

TEST(LabelSelector, CanonicalStringRoundTrips) {
  auto s = sel("queue in (spark,flink),app=web,!gpu,zone,tier!=x");
  EXPECT_EQ(s.to_string(), "queue in (flink,spark),app=web,!gpu,zone,tier!=x");
  EXPECT_EQ(sel(s.to_string().c_str()).to_string(), s.to_string());
}

TEST(LabelSelector, FromMetav1Json) {
  auto s = LabelSelector::from_json(Json::parse(R"({"matchLabels":{"app":"web"},
      "matchExpressions":[{"key":"zone","operator":"In","values":["a","b"]},
                          {"key":"gpu","operator":"DoesNotExist"}]})"),
                                    "nodeSelector");
  ASSERT_TRUE(s.ok()) << s.error().message;
  EXPECT_TRUE(s->matches({{"app", "web"}, {"zone", "b"}}));
  EXPECT_FALSE(s->matches({{"app", "web"}, {"zone", "c"}}));
  EXPECT_FALSE(s->matches({{"app", "web"}, {"zone", "a"}, {"gpu", "1"}}));
  auto bad = LabelSelector::from_json(
      Json::parse(R"({"matchExpressions":[{"key":"zone","operator":"Near"}]})"), "spec.x");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("spec.x"), std::string::npos);
  EXPECT_FALSE(LabelSelector::from_json(
                   Json::parse(R"({"matchExpressions":[{"key":"z","operator":"In"}]})"), "s")
                   .ok());
}

TEST(NodeSelectorTerms, OneParserOneEvaluatorOneRenderer) {
  auto terms = node_selector_terms(Json::parse(R"([
      {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["b", "a"]},
                            {"key": "gpu", "operator": "DoesNotExist"}]},
      {"matchExpressions": [{"key": "pool", "operator": "NotIn", "values": ["batch"]}]},
      {}])"),
                                   "nodeSelectorTerms");
  ASSERT_TRUE(terms.ok()) << terms.error().message;
  ASSERT_EQ(terms->size(), 3u);
  EXPECT_EQ((*terms)[0][0].to_string(), "zone in (a,b)");
  EXPECT_EQ((*terms)[0][1].to_string(), "!gpu");
  EXPECT_EQ((*terms)[1][0].to_string(), "pool!=batch");
  EXPECT_TRUE((*terms)[2].empty());
  // Terms are ORed, requirements ANDed; the empty term matches no node (NodeSelectorTerm).
  EXPECT_TRUE(terms_match(*terms, {{"zone", "a"}, {"pool", "batch"}}));
  EXPECT_TRUE(terms_match(*terms, {{"zone", "c"}}));  // pool absent: NotIn holds
  EXPECT_FALSE(terms_match(*terms, {{"zone", "c"}, {"pool", "batch"}}));
  EXPECT_FALSE(terms_match({{}}, {{"zone", "a"}}));
  auto gt = node_selector_terms(
      Json::parse(R"([{"matchExpressions": [{"key": "c", "operator": "Gt", "values": ["4"]}]}])"),
      "t");
  ASSERT_FALSE(gt.ok());
  EXPECT_NE(gt.error().message.find("t[0].matchExpressions[0].operator"), std::string::npos);
  EXPECT_FALSE(node_selector_terms(Json::parse(R"({"a": 1})"), "t").ok());
}

TEST(LabelSelector, RendersWhatItParses) {
  for (const char* text : {"a=b,c!=d,e in (x,y),f notin (u,v),g,!h"}) {
    EXPECT_EQ(sel(text).to_string(), text);
    EXPECT_EQ(sel(sel(text).to_string().c_str()).requirements(), sel(text).requirements());
  }
}

TEST(QueryString, EncodesSelectorsAndSkipsEmptyValues) {
  EXPECT_EQ(
      query_string(
          {{"labelSelector", "app in (a,b)"}, {"limit", ""}, {"fieldSelector", "spec.nodeName="}}),
      "?labelSelector=app%20in%20%28a%2Cb%29&fieldSelector=spec.nodeName%3D");
  EXPECT_EQ(query_string({{"limit", ""}}), "");
}

}  // namespace
}  // namespace gleaner::kube
