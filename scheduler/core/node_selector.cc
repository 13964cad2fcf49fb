#include "scheduler/core/node_selector.h"

#include <algorithm>

namespace gleaner::scheduler {

bool NodeSelector::matches(const Labels& node_labels) const {
  for (const auto& [k, v] : labels) {
    auto it = node_labels.find(k);
    if (it == node_labels.end() || it->second != v) return false;
  }
  return terms.empty() || terms_match(terms, node_labels);
}

std::string NodeSelector::to_string() const {
  std::string out;
  auto sep = [&](const char* s) {
    if (!out.empty()) out += s;
  };
  for (const auto& [k, v] : labels) {
    sep(", ");
    out.append(k).append("=").append(v);
  }
  std::string affinity;
  for (const auto& term : terms) {
    if (!affinity.empty()) affinity += " or ";
    std::string t;
    for (const auto& r : term) {
      if (!t.empty()) t += " and ";
      t += r.to_string();
    }
    affinity += t.empty() ? "(empty term)" : t;
  }
  if (!affinity.empty()) {
    sep(", ");
    out += "affinity: " + affinity;
  }
  return out;
}

bool taints_tolerated(const Taints& taints, const std::vector<std::vector<Toleration>>& pods) {
  if (pods.empty()) return first_untolerated(taints, {}) == nullptr;
  return std::all_of(pods.begin(), pods.end(), [&](const std::vector<Toleration>& pod) {
    return first_untolerated(taints, pod) == nullptr;
  });
}

NodeSelector merge_selectors(NodeSelector a, const NodeSelector& b) {
  a.tolerations.insert(a.tolerations.end(), b.tolerations.begin(), b.tolerations.end());
  if (a.terms.empty()) {
    a.terms = b.terms;
  } else if (!b.terms.empty()) {
    // (a1 or a2) and (b1 or b2) = every pairing of a term of each, ANDed.
    std::vector<std::vector<LabelRequirement>> product;
    for (const auto& x : a.terms) {
      for (const auto& y : b.terms) {
        auto both = x;
        both.insert(both.end(), y.begin(), y.end());
        product.push_back(std::move(both));
      }
    }
    a.terms = std::move(product);
  }
  for (const auto& [k, v] : b.labels) {
    auto [it, added] = a.labels.emplace(k, v);
    if (added || it->second == v) continue;
    // Two values for one label: no node can match; say so with a requirement that keeps
    // both visible in pending reasons.
    if (a.terms.empty()) a.terms.emplace_back();
    for (auto& term : a.terms)
      term.push_back(LabelRequirement{k, LabelOp::kIn, {v}});
  }
  return a;
}

}  // namespace gleaner::scheduler
