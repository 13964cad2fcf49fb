#include "common/taints.h"

#include <algorithm>

namespace gleaner {

bool Toleration::tolerates(const Taint& taint) const {
  if (effect && *effect != taint.effect) return false;
  if (key.empty()) return exists;  // an empty key with Exists tolerates everything
  if (key != taint.key) return false;
  return exists || value == taint.value;
}

const Taint* first_untolerated(const Taints& taints, const std::vector<Toleration>& tolerations) {
  for (const Taint& taint : taints) {
    if (taint.effect == TaintEffect::kPreferNoSchedule) continue;
    if (std::none_of(tolerations.begin(), tolerations.end(),
                     [&](const Toleration& t) { return t.tolerates(taint); })) {
      return &taint;
    }
  }
  return nullptr;
}

std::string to_string(const Taint& taint) {
  const char* effect = taint.effect == TaintEffect::kNoSchedule         ? "NoSchedule"
                       : taint.effect == TaintEffect::kPreferNoSchedule ? "PreferNoSchedule"
                                                                        : "NoExecute";
  return taint.key + (taint.value.empty() ? "" : "=" + taint.value) + ":" + effect;
}

}  // namespace gleaner
