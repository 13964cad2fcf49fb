#include "scheduler/core/quota_tree.h"

#include <set>

namespace gleaner::scheduler {

const char* to_string(QueueingPolicy policy) {
  return policy == QueueingPolicy::kBlocking ? "blocking" : "nonblocking";
}

QuotaTree::QuotaTree() {
  queues_.push_back(Queue{"root", kRoot, {}, std::nullopt, std::nullopt, {}});
  ids_.emplace("root", kRoot);
}

Result<QuotaTree> QuotaTree::build(const std::vector<QueueSpec>& specs,
                                   std::optional<Resources> root_max) {
  QuotaTree tree;
  tree.queues_[kRoot].max = root_max;
  std::map<std::string, const QueueSpec*> by_name;
  for (const QueueSpec& s : specs) {
    if (s.name.empty()) return make_error(ErrorCode::kInvalidArgument, "queue without a name");
    if (s.name == "root") {
      return make_error(ErrorCode::kInvalidArgument, "queue root is implicit; do not declare it");
    }
    if (!by_name.emplace(s.name, &s).second) {
      return make_error(ErrorCode::kInvalidArgument, "queue " + s.name + " declared twice");
    }
    if (s.min && s.max && !s.min->fits_in(*s.max)) {
      return make_error(
          ErrorCode::kInvalidArgument,
          "queue " + s.name + ": min " + s.min->to_string() + " exceeds max " + s.max->to_string());
    }
  }
  // Insert parents before children, following each chain up to root.
  for (const QueueSpec& s : specs) {
    std::vector<const QueueSpec*> chain;
    std::set<std::string> seen;
    const QueueSpec* cur = &s;
    while (cur != nullptr && !tree.find(cur->name)) {
      if (!seen.insert(cur->name).second) {
        return make_error(ErrorCode::kInvalidArgument,
                          "queue " + cur->name + ": parent chain forms a cycle");
      }
      chain.push_back(cur);
      if (cur->parent == "root" || cur->parent.empty()) break;
      auto it = by_name.find(cur->parent);
      if (it == by_name.end()) {
        return make_error(ErrorCode::kInvalidArgument,
                          "queue " + cur->name + ": unknown parent " + cur->parent);
      }
      cur = it->second;
    }
    for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
      const QueueSpec& q = **it;
      QueueId parent = q.parent.empty() ? kRoot : *tree.find(q.parent);
      auto id = static_cast<QueueId>(tree.queues_.size());
      tree.queues_.push_back(
          Queue{q.name, parent, q.min.value_or(Resources{}), q.max, q.queueing, {}});
      tree.ids_.emplace(q.name, id);
    }
  }
  return tree;
}

std::optional<QueueId> QuotaTree::find(const std::string& name) const {
  auto it = ids_.find(name);
  if (it == ids_.end()) return std::nullopt;
  return it->second;
}

Result<QueueId> QuotaTree::resolve(const std::string& name) {
  const std::string wanted = name.empty() ? "default" : name;
  if (auto id = find(wanted)) return *id;
  if (wanted != "default") {
    return make_error(ErrorCode::kNotFound, "unknown queue " + wanted);
  }
  auto id = static_cast<QueueId>(queues_.size());
  queues_.push_back(Queue{"default", kRoot, {}, std::nullopt, std::nullopt, {}});
  ids_.emplace("default", id);
  return id;
}

bool QuotaTree::exceeds_max_alone(QueueId id, const Resources& request) const {
  for (QueueId q = id; q != kRoot; q = queues_[q].parent) {
    if (queues_[q].max && !request.fits_in(*queues_[q].max)) return true;
  }
  return false;
}

bool QuotaTree::within_max(QueueId id, const Resources& request) const {
  for (QueueId q = id; q != kRoot; q = queues_[q].parent) {
    if (queues_[q].max && !(queues_[q].used + request).fits_in(*queues_[q].max)) return false;
  }
  return true;
}

bool QuotaTree::within_min(QueueId id, const Resources& request) const {
  if (id == kRoot) return false;
  return (queues_[id].used + request).fits_in(queues_[id].min);
}

bool QuotaTree::borrowing(QueueId id) const {
  if (id == kRoot) return false;
  return !queues_[id].used.fits_in(queues_[id].min);
}

void QuotaTree::charge(QueueId id, const Resources& request) {
  for (QueueId q = id;; q = queues_[q].parent) {
    queues_[q].used += request;
    if (q == kRoot) break;
  }
}

void QuotaTree::refund(QueueId id, const Resources& request) {
  for (QueueId q = id;; q = queues_[q].parent) {
    queues_[q].used -= request;
    if (q == kRoot) break;
  }
}

}  // namespace gleaner::scheduler
