#pragma once
// Elastic quota tree (the ElasticQuotaTree idea): every queue has a guaranteed `min` and
// a ceiling `max`. A queue may borrow idle capacity beyond its min up to its max (and the
// max of every ancestor); borrowed capacity is what reclaim may take back. `root` is
// implicit and unlimited; `default` (no min, no max) takes jobs that name no queue.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"
#include "scheduler/core/resources.h"

namespace gleaner::scheduler {

using QueueId = uint32_t;

enum class QueueingPolicy {
  kBlocking,     // strict order: a job that does not fit holds back the rest of its queue
  kNonBlocking,  // later jobs that fit go ahead
};
const char* to_string(QueueingPolicy policy);

struct QueueSpec {
  std::string name;
  std::string parent = "root";
  std::optional<Resources> min;            // absent: nothing guaranteed
  std::optional<Resources> max;            // absent: no ceiling
  std::optional<QueueingPolicy> queueing;  // absent: the scheduler-wide policy
};

struct Queue {
  std::string name;
  QueueId parent = 0;
  Resources min;
  std::optional<Resources> max;
  std::optional<QueueingPolicy> queueing;
  Resources used;  // sum of admitted jobs' full gang requests, including descendants
};

class QuotaTree {
 public:
  static constexpr QueueId kRoot = 0;

  QuotaTree();
  // Builds a tree from specs in any order; errors name the queue and the problem
  // (unknown parent, cycle, duplicate, min above max).
  // `root_max`: a ceiling on the whole tree (an ElasticQuotaTree's root max).
  static Result<QuotaTree> build(const std::vector<QueueSpec>& specs,
                                 std::optional<Resources> root_max = std::nullopt);

  [[nodiscard]] std::optional<QueueId> find(const std::string& name) const;
  // The queue for a job: `name`, or `default` (created on first use) when empty.
  Result<QueueId> resolve(const std::string& name);
  [[nodiscard]] const Queue& queue(QueueId id) const { return queues_[id]; }
  [[nodiscard]] size_t size() const { return queues_.size(); }

  // A request no amount of waiting can admit: above the max of the queue or an ancestor.
  [[nodiscard]] bool exceeds_max_alone(QueueId id, const Resources& request) const;
  // Admitting `request` keeps the queue and all its ancestors within their max.
  [[nodiscard]] bool within_max(QueueId id, const Resources& request) const;
  // Admitting `request` keeps the queue within its guaranteed min.
  [[nodiscard]] bool within_min(QueueId id, const Resources& request) const;
  // The queue uses more than its min: part of what it holds is borrowed.
  [[nodiscard]] bool borrowing(QueueId id) const;

  void charge(QueueId id, const Resources& request);
  void refund(QueueId id, const Resources& request);

 private:
  std::vector<Queue> queues_;
  std::map<std::string, QueueId> ids_;
};

}  // namespace gleaner::scheduler
