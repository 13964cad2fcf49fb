#include "kube/selectors.h"

#include <cstdint>
#include <vector>

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

TEST(LabelSelector, FromJsonMatchesFieldNamesExactlyOrInAnyCase) {
  const Json json = Json::parse(R"({"MatchLabels": {"app": "web"}})");
  auto exact = LabelSelector::from_json(json, "s");
  ASSERT_TRUE(exact.ok()) << exact.error().message;
  EXPECT_TRUE(exact->requirements().empty());  // not metav1's field name: not read
  auto any = LabelSelector::from_json(json, "s", FieldNames::kAnyCase);
  ASSERT_TRUE(any.ok()) << any.error().message;
  EXPECT_EQ(any->to_string(), "app=web");
  // A field of the wrong type is kParse and named; a value refused is kInvalidArgument.
  auto type = LabelSelector::from_json(
      Json::parse(R"({"matchExpressions": [{"key": "z", "operator": "In", "values": [1]}]})"), "s");
  ASSERT_FALSE(type.ok());
  EXPECT_EQ(type.error().code, ErrorCode::kParse);
  EXPECT_EQ(type.error().message, "s.matchExpressions[0].values[0]: expected a string, got number");
  auto value = LabelSelector::from_json(Json::parse(R"({"matchLabels": {"app": "-web"}})"), "s");
  ASSERT_FALSE(value.ok());
  EXPECT_EQ(value.error().code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(value.error().message, "s.matchLabels.app: invalid label value \"-web\"");
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
  EXPECT_FALSE(node_selector_terms(Json::parse(R"({"a": 1})"), "t").ok());
}

// One node affinity expression, or the error naming its field.
Result<LabelRequirement> node_expr(const char* expr) {
  auto terms = node_selector_terms(
      Json::parse(std::string(R"([{"matchExpressions": [)") + expr + "]}]"), "t");
  if (!terms) return terms.error();
  return (*terms)[0][0];
}

std::string error_of(const Result<LabelRequirement>& r) {
  return r.ok() ? std::string("ok") : r.error().message;
}

TEST(NodeSelectorTerms, GtAndLtCompareTheLabelAsAnInteger) {
  auto gt = node_expr(R"({"key": "gpu-count", "operator": "Gt", "values": ["1"]})");
  auto lt = node_expr(R"({"key": "gpu-count", "operator": "Lt", "values": ["4"]})");
  ASSERT_TRUE(gt.ok()) << gt.error().message;
  ASSERT_TRUE(lt.ok()) << lt.error().message;
  EXPECT_FALSE(gt->matches({{"gpu-count", "1"}}));  // strictly greater
  EXPECT_TRUE(gt->matches({{"gpu-count", "2"}}));
  EXPECT_TRUE(gt->matches({{"gpu-count", "10"}}));  // as numbers: "10" > "1", and > "9"
  EXPECT_TRUE(lt->matches({{"gpu-count", "3"}}));
  EXPECT_FALSE(lt->matches({{"gpu-count", "4"}}));
  EXPECT_TRUE(lt->matches({{"gpu-count", "-2"}}));
  // A label that is missing or not an integer matches neither (selector.go: ParseInt fails).
  for (const Labels& labels : std::vector<Labels>{{},
                                                  {{"gpu-count", "two"}},
                                                  {{"gpu-count", "2.0"}},
                                                  {{"gpu-count", "99999999999999999999"}}}) {
    EXPECT_FALSE(gt->matches(labels));
    EXPECT_FALSE(lt->matches(labels));
  }
  EXPECT_EQ(gt->to_string(), "gpu-count>1");
  EXPECT_EQ(lt->to_string(), "gpu-count<4");
}

TEST(NodeSelectorTerms, MalformedGtOrLtIsRefusedNamingTheField) {
  EXPECT_EQ(error_of(node_expr(R"({"key": "c", "operator": "Gt"})")),
            "t[0].matchExpressions[0].values: exactly one value is required for Gt, got 0");
  EXPECT_EQ(error_of(node_expr(R"({"key": "c", "operator": "Lt", "values": ["1", "1"]})")),
            "t[0].matchExpressions[0].values: exactly one value is required for Lt, got 2");
  EXPECT_EQ(error_of(node_expr(R"({"key": "c", "operator": "Gt", "values": ["4x"]})")),
            "t[0].matchExpressions[0].values[0]: \"4x\" is not an integer (Gt)");
  EXPECT_EQ(error_of(node_expr(R"({"key": "c", "operator": "Lt", "values": ["+-4"]})")),
            "t[0].matchExpressions[0].values[0]: \"+-4\" is not an integer (Lt)");
}

TEST(LabelSelector, RefusesGtAndLtNamingTheField) {
  // metav1.LabelSelector has no Gt or Lt: the API server refuses them, and so does gleaner.
  for (const char* op : {"Gt", "Lt"}) {
    Json json = Json::parse(R"({"matchExpressions": [{"key": "gpu-count", "values": ["1"]}]})");
    json["matchExpressions"][0]["operator"] = op;
    auto s = LabelSelector::from_json(json, "spec.resourceSelectors[0].labelSelector");
    ASSERT_FALSE(s.ok()) << op;
    EXPECT_EQ(s.error().message,
              "spec.resourceSelectors[0].labelSelector.matchExpressions[0].operator: operator " +
                  std::string(op) +
                  " is not valid in a label selector (In, NotIn, Exists, DoesNotExist; Gt and "
                  "Lt belong to node affinity only)");
  }
}

TEST(LabelInteger, ReadsAsStrconvParseIntBase10) {
  EXPECT_EQ(label_integer("42"), 42);
  EXPECT_EQ(label_integer("-7"), -7);
  EXPECT_EQ(label_integer("+7"), 7);
  EXPECT_EQ(label_integer("9223372036854775807"), INT64_MAX);
  for (const char* bad :
       {"", "+", "-", "+-1", "++1", " 1", "1 ", "0x10", "1_000", "1e3", "9223372036854775808"}) {
    EXPECT_EQ(label_integer(bad), std::nullopt) << bad;
  }
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
