#include "scheduler/kube/elastic_quota_tree.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <set>

#include "common/json_util.h"
#include "common/strings.h"
#include "kube/objects.h"
#include "kube/well_known.h"

namespace gleaner::scheduler::kube_glue {

namespace {

constexpr int kMaxDepth = 16;

struct Walk {
  std::string object;  // "namespace/name", for errors
  QuotaConfig out;
  std::set<std::string> names;

  // Every problem of the tree, "node: what", so that one edit can fix them all.
  std::vector<std::string> problems;

  Error error(const std::string& at, const std::string& message) const {
    return make_error(ErrorCode::kParse, "ElasticQuotaTree " + object + ": " + at + ": " + message);
  }
  void problem(const std::string& at, const std::string& message) {
    problems.push_back(at + ": " + message);
  }
  // A min or max that could not be read: its problem recorded, nothing taken from it.
  std::optional<Resources> amounts_or_problem(const Json& node, const char* field,
                                              const std::string& at, int64_t absent) {
    auto r = amounts(node, field, at, absent);
    if (r) return *r;
    problems.push_back(r.error().message);
    return std::nullopt;
  }

  // cpu/memory/GPUs of a min or max; `absent` fills what the node does not name (GPUs
  // unnamed in a max are unlimited as well, without the overflow risk of INT64_MAX).
  Result<std::optional<Resources>> amounts(const Json& node, const char* field,
                                           const std::string& at, int64_t absent) {
    if (!node.contains(field) || node[field].is_null()) return std::optional<Resources>();
    const Json& list = node[field];
    if (!list.is_object())
      return make_error(ErrorCode::kParse, at + ": " + field + " must be a map of quantities");
    Resources r{absent, absent, absent == 0 ? 0 : kGpusUnlimited};
    for (const auto& [name, value] : list.items()) {
      std::string where = at;
      where.append(".").append(field).append(".").append(name);
      auto q = quantity_from_json(value, where);
      if (!q) return make_error(ErrorCode::kParse, at + ": " + q.error().message);
      if (q->milli_value() < 0)
        return make_error(ErrorCode::kParse, at + ": " + field + "." + name + " is negative");
      if (name == kube::kResourceCpu) {
        r.cpu_milli = q->milli_value();
      } else if (name == kube::kResourceBatchCpu) {
        r.cpu_milli = q->value();
      } else if (name == kube::kResourceMemory || name == kube::kResourceBatchMemory) {
        r.memory_bytes = q->value();
      } else if (name == kResourceGpu) {
        r.gpus = q->value();
      } else {
        std::string warning = "ElasticQuotaTree " + object;
        warning.append(": ").append(at).append(": ").append(field).append(".").append(name);
        warning += " is not a resource Gleaner schedules; ignored";
        out.warnings.push_back(std::move(warning));
      }
    }
    return std::optional<Resources>(r);
  }

  void node(const Json& n, const std::string& parent, const std::string& at, int depth) {
    // A node that cannot be read ends the walk below it; any other problem is recorded and
    // the walk goes on, so that every problem of the tree is reported at once.
    if (depth > kMaxDepth) return problem(at, "deeper than 16 levels");
    if (!n.is_object()) return problem(at, "not an object");
    const std::string name = string_at(n, "name");
    if (name.empty()) return problem(at, "name is missing");
    const std::string& here = name;
    if (!names.insert(name).second) problem(here, "name used twice");
    auto min = amounts_or_problem(n, "min", here, 0);
    auto max = amounts_or_problem(n, "max", here, std::numeric_limits<int64_t>::max());
    const bool root = depth == 0;
    const Json children = n.value("children", Json::array());
    if (!children.is_null() && !children.is_array()) problem(here, "children must be a list");
    const Json namespaces = n.value("namespaces", Json::array());
    if (!namespaces.is_null() && !namespaces.is_array()) problem(here, "namespaces must be a list");
    const bool leaf = !children.is_array() || children.empty();
    if (namespaces.is_array() && !namespaces.empty()) {
      if (!leaf || root) problem(here, "namespaces may only be set on leaves");
      for (const Json& ns : namespaces) {
        if (!ns.is_string() || ns.get<std::string>().empty()) {
          problem(here, "namespaces must be names");
          continue;
        }
        if (!out.namespace_queue.emplace(ns.get<std::string>(), name).second) {
          problem(here, "namespace " + ns.get<std::string>() + " is already in " +
                            out.namespace_queue[ns.get<std::string>()]);
        }
      }
    }
    if (root) {
      out.root_max = max;
    } else {
      out.queues.push_back(QueueSpec{name, parent, min, max, std::nullopt});
    }
    if (children.is_array()) {
      for (const Json& c : children)
        node(c, root ? "root" : name, here, depth + 1);
    }
  }
};

// The annotation's "queue=policy" entries onto the queues they name.
Status read_queueing(const Json& object, Walk& w) {
  // Not find_path: the annotation key contains a '/'.
  const Json* annotations = find_path(object, "metadata/annotations");
  if (annotations == nullptr || !annotations->is_object()) return ok_status();
  auto it = annotations->find(kube::kQueueingAnnotation);
  if (it == annotations->end() || !it->is_string()) return ok_status();
  const std::string at = std::string("metadata.annotations[") + kube::kQueueingAnnotation + "]";
  std::string_view rest = it->get_ref<const std::string&>();
  while (!rest.empty()) {
    const size_t comma = rest.find(',');
    const std::string_view entry = trim(rest.substr(0, comma));
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
    if (entry.empty()) continue;
    const size_t eq = entry.find('=');
    const std::string queue(trim(entry.substr(0, eq)));
    const std::string policy(eq == std::string_view::npos ? "" : trim(entry.substr(eq + 1)));
    if (policy != "blocking" && policy != "nonblocking") {
      return w.error(
          at, "\"" + std::string(entry) + "\": expected QUEUE=blocking or QUEUE=nonblocking");
    }
    auto q = std::find_if(w.out.queues.begin(), w.out.queues.end(),
                          [&](const QueueSpec& s) { return s.name == queue; });
    if (q == w.out.queues.end()) {
      return w.error(at, "no queue " + queue + " below the root (the whole tree follows --policy)");
    }
    q->queueing = policy == "blocking" ? QueueingPolicy::kBlocking : QueueingPolicy::kNonBlocking;
  }
  return ok_status();
}

}  // namespace

Result<QuotaConfig> parse_elastic_quota_tree(const Json& object) {
  Walk w;
  w.object =
      string_at(object, "metadata/namespace", "?") + "/" + string_at(object, "metadata/name", "?");
  const Json* root = find_path(object, "spec/root");
  if (root == nullptr) return w.error("spec", "root is missing");
  if (string_at(*root, "name") == "default")
    return w.error("root", "the root may not be named default");
  w.node(*root, "", "root", 0);
  if (!w.problems.empty()) {
    std::string all;
    for (const std::string& p : w.problems)
      all += (all.empty() ? "" : "; ") + p;
    return make_error(ErrorCode::kParse,
                      "ElasticQuotaTree " + w.object + ": " + std::to_string(w.problems.size()) +
                          (w.problems.size() == 1 ? " problem: " : " problems: ") + all);
  }
  // The root's own name stands for the implicit root queue.
  const std::string root_name = string_at(*root, "name");
  for (auto& q : w.out.queues) {
    if (q.name == "root" && root_name != "root")
      return w.error(q.name, "the name root is reserved");
    if (q.parent == root_name) q.parent = "root";
  }
  if (Status s = read_queueing(object, w); !s) return s.error();
  if (auto built = QuotaTree::build(w.out.queues, w.out.root_max); !built)
    return w.error("spec.root", built.error().message);
  return std::move(w.out);
}

}  // namespace gleaner::scheduler::kube_glue
