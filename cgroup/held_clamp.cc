#include "cgroup/held_clamp.h"

namespace gleaner::cgroup {

std::map<std::string, std::string> HeldClamps::standing(
    Resource resource, const std::map<std::string, LimitNode>& tree,
    const std::function<bool(const std::string&)>& exists) {
  auto& clamps = by_resource_[resource];
  std::erase_if(clamps, [&](const auto& entry) {
    auto node = tree.find(entry.first);
    if (node == tree.end()) return !exists(entry.first);
    return node->second.value != entry.second.clamped_to;
  });
  std::map<std::string, std::string> wishes;
  for (const auto& [cg, clamp] : clamps)
    wishes.emplace(cg, clamp.wish);
  return wishes;
}

void HeldClamps::keep(Resource resource, const std::map<std::string, std::string>& held,
                      const std::map<std::string, FittedValue>& fitted,
                      const std::map<std::string, LimitNode>& tree) {
  auto& clamps = by_resource_[resource];
  std::map<std::string, Clamp> kept;
  for (const auto& [cg, wish] : held) {
    if (auto fit = fitted.find(cg); fit != fitted.end()) {
      kept[cg] = {wish, fit->second.value};
    } else if (auto node = tree.find(cg); node != tree.end()) {
      kept[cg] = {wish, node->second.value};
    } else if (auto old = clamps.find(cg); old != clamps.end()) {
      kept[cg] = old->second;  // outside the subtrees looked at: as it was
    }
  }
  clamps = std::move(kept);
}

std::vector<HeldClamp> HeldClamps::list() const {
  std::vector<HeldClamp> out;
  for (const auto& [resource, clamps] : by_resource_) {
    for (const auto& [cg, clamp] : clamps)
      out.push_back({resource, cg, clamp.wish, clamp.clamped_to});
  }
  return out;
}

void HeldClamps::adopt(const std::vector<HeldClamp>& clamps) {
  by_resource_.clear();
  for (const auto& c : clamps)
    by_resource_[c.resource][c.cgroup] = {c.wish, c.clamped_to};
}

}  // namespace gleaner::cgroup
