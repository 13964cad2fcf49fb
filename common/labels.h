#pragma once
// Kubernetes labels and the one requirement every selector is made of (a label
// selector's matchExpressions, a node affinity term, a PropagationPolicy's cluster
// labelSelector, ack-slo-config's nodeSelector): key, operator, values.

#include <compare>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace gleaner {

using Labels = std::map<std::string, std::string>;

// Gt and Lt exist only in node affinity (corev1.NodeSelectorRequirement); a label
// selector (metav1.LabelSelectorRequirement) has the first four alone. The readers in
// kube/selectors.h enforce which set a field takes.
enum class LabelOp { kIn, kNotIn, kExists, kDoesNotExist, kGt, kLt };

struct LabelRequirement {
  std::string key;
  LabelOp op = LabelOp::kExists;
  std::set<std::string> values;  // In / NotIn; Gt / Lt: the one integer bound

  // As Kubernetes: a label set without `key` matches NotIn and DoesNotExist. Gt and Lt
  // compare the label's value and the bound as base-10 int64 (apimachinery
  // pkg/labels/selector.go, Requirement.Matches): a missing label, a value that is not an
  // integer, or a requirement without exactly one integer bound matches nothing.
  [[nodiscard]] bool matches(const Labels& labels) const;
  // The selector-string form every reader accepts: "k", "!k", "k=v", "k!=v",
  // "k in (a,b)", "k notin (a,b)" (values in order); Gt and Lt as "k>v" and "k<v"
  // (the form apimachinery's Requirement.String writes), seen in pending reasons only.
  [[nodiscard]] std::string to_string() const;
  auto operator<=>(const LabelRequirement&) const = default;
};

// `text` as Go's strconv.ParseInt(text, 10, 64) reads it (an optional sign, then decimal
// digits, in int64 range), or nullopt: how Kubernetes reads Gt/Lt bounds and label values.
std::optional<int64_t> label_integer(std::string_view text);

// A node affinity's nodeSelectorTerms, one list of requirements a term: any term whose every
// requirement holds. An empty term matches nothing, as Kubernetes defines NodeSelectorTerm
// ("a null or empty node selector term matches no objects").
bool terms_match(const std::vector<std::vector<LabelRequirement>>& terms, const Labels& labels);

}  // namespace gleaner
