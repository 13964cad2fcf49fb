#pragma once
// Where a gang's pods go, as scores over the nodes that fit them, at two points: the
// leader's node and every other pod's node.
//   spread leaders (always on): the leader goes to the node with the most free CPU, then
//     memory, so that drivers of different jobs rarely share a node;
//   pack by CPU then memory (always on): every other pod goes to the node with the least
//     free CPU, then memory, that still takes it (best fit);
//   GPU bin-pack (optional): for a pod that asks for GPUs, at both points, the node where
//     the share of its capacity requested, this pod included, is highest, each resource
//     weighted: RequestedToCapacityRatio with a rising shape, as kube-scheduler's
//     NodeResourcesFit scores it. With the GPU weight above CPU and memory, a GPU job goes
//     where it leaves the fewest GPUs stranded; the packing and spreading rules only break
//     its ties. MostAllocated alone counts CPU and memory, so 4-GPU jobs spread over two
//     8-GPU nodes and an 8-GPU job fits neither.
// The two rules that are always on are kept as ordered indexes (cluster_state.h) so that
// they cost O(log n); a score that decides walks the fitting nodes in that order.

#include <cstdint>
#include <optional>

#include "scheduler/core/resources.h"

namespace gleaner::scheduler {

struct Node;

// How much each resource counts in a RequestedToCapacityRatio score (0: not at all).
struct ResourceWeights {
  int64_t cpu = 1;
  int64_t memory = 1;
  int64_t gpus = 0;
  friend bool operator==(const ResourceWeights&, const ResourceWeights&) = default;
};

struct PlacementScores {
  // nullopt: off (placement by the two rules alone).
  std::optional<ResourceWeights> gpu_bin_pack;
};

// The weighted mean, over the resources the node has (capacity above zero) and the weights
// count, of the share of the node's capacity its pods would request with one more pod of
// `batch` and `regular` (0..1000, in thousandths). A node's GPUs are its batch GPUs and
// those its Node's allocatable leaves after pods outside our jobs.
int64_t requested_to_capacity_score(const Node& node, const Resources& batch,
                                    const Resources& regular, const ResourceWeights& weights);

}  // namespace gleaner::scheduler
