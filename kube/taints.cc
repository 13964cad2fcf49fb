#include "kube/taints.h"

#include <optional>

#include "common/json_util.h"

namespace gleaner::kube {
namespace {

std::optional<TaintEffect> effect_named(const std::string& name) {
  if (name == "NoSchedule") return TaintEffect::kNoSchedule;
  if (name == "PreferNoSchedule") return TaintEffect::kPreferNoSchedule;
  if (name == "NoExecute") return TaintEffect::kNoExecute;
  return std::nullopt;
}

}  // namespace

Result<std::vector<Toleration>> tolerations_in(const Json& list, const std::string& where) {
  std::vector<Toleration> out;
  if (list.is_null()) return out;
  if (!list.is_array()) return invalid_field(where, "expected an array");
  for (size_t i = 0; i < list.size(); ++i) {
    const Json& t = list[i];
    const std::string at = where + "[" + std::to_string(i) + "]";
    if (!t.is_object()) return invalid_field(at, "expected an object");
    Toleration tol;
    tol.key = t.value("key", "");
    const std::string op = t.value("operator", "Equal");
    if (op != "Equal" && op != "Exists") {
      return invalid_field(at + ".operator", "expected Equal or Exists, got " + op);
    }
    tol.exists = op == "Exists";
    tol.value = t.value("value", "");
    const std::string effect = t.value("effect", "");
    if (!effect.empty()) {
      tol.effect = effect_named(effect);
      if (!tol.effect) return invalid_field(at + ".effect", "unknown effect " + effect);
    }
    out.push_back(std::move(tol));
  }
  return out;
}

Taints taints_in(const Json& list) {
  Taints out;
  if (!list.is_array()) return out;
  for (const auto& t : list) {
    if (!t.is_object() || !t.contains("key") || !t["key"].is_string()) continue;
    auto effect = effect_named(t.value("effect", ""));
    if (!effect) continue;
    out.push_back(Taint{t["key"].get<std::string>(), t.value("value", ""), *effect});
  }
  return out;
}

}  // namespace gleaner::kube
