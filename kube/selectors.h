#pragma once
// Label selectors (the string form "a=b,c!=d,e in (x,y),!f,g" and metav1.LabelSelector's
// matchLabels/matchExpressions) and the query-string encoding of list/watch requests.

#include <string>
#include <string_view>
#include <vector>

#include "common/json_field.h"
#include "common/json_fwd.h"
#include "common/labels.h"
#include "common/result.h"

namespace gleaner::kube {

// Every requirement must hold (common/labels.h: the requirement itself).
class LabelSelector {
 public:
  // The empty selector matches everything.
  static Result<LabelSelector> parse(std::string_view text);
  // metav1.LabelSelector (null: the empty selector). Errors name the field at fault, from
  // `where` on (".matchLabels.<key>", ".matchExpressions[0].operator"): kParse for a field of
  // the wrong JSON type, kInvalidArgument for a value refused. `names`: how field names are
  // matched (kAnyCase for ack-slo-config, read as Koordinator's Go decoder reads it).
  static Result<LabelSelector> from_json(const Json& json, std::string_view where,
                                         FieldNames names = FieldNames::kExact);

  [[nodiscard]] bool matches(const Labels& labels) const;
  // Canonical string form, accepted by the API server's labelSelector parameter.
  [[nodiscard]] std::string to_string() const;
  [[nodiscard]] const std::vector<LabelRequirement>& requirements() const { return reqs_; }

 private:
  std::vector<LabelRequirement> reqs_;
};

// Which operators a matchExpressions entry may use. A label selector
// (metav1.LabelSelectorRequirement) takes In, NotIn, Exists and DoesNotExist: the API server
// refuses any other (apimachinery pkg/apis/meta/v1/validation, ValidateLabelSelectorRequirement).
// A node affinity term (corev1.NodeSelectorRequirement) takes Gt and Lt too
// (component-helpers scheduling/corev1/nodeaffinity/nodeaffinity.go,
// nodeSelectorRequirementsAsSelector), each with exactly one value that is an integer
// (apimachinery pkg/labels/selector.go, NewRequirement; core validation's
// validateNodeSelectorRequirement asks for the single value).
enum class RequirementOps { kLabelSelector, kNodeSelector };

// One matchExpressions entry; `where` names the entry in errors, which name the field at
// fault (".operator", ".values", ".values[0]"), with the codes of LabelSelector::from_json.
Result<LabelRequirement> requirement_from_json(const Json& expr, const std::string& where,
                                               RequirementOps ops = RequirementOps::kLabelSelector,
                                               FieldNames names = FieldNames::kExact);

// A node affinity's nodeSelectorTerms (`where` names the list): one list of requirements a
// term, for terms_match (common/labels.h), Gt and Lt included. matchFields is refused with
// the field named: it is not modelled.
Result<std::vector<std::vector<LabelRequirement>>> node_selector_terms(const Json& terms,
                                                                       const std::string& where);

// Percent-encodes a query parameter value (RFC 3986 unreserved characters stay).
std::string url_encode(std::string_view text);
// "?k1=v1&k2=v2" from the non-empty values, or "" when none.
std::string query_string(const std::vector<std::pair<std::string, std::string>>& params);

}  // namespace gleaner::kube
