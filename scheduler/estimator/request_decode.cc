#include "scheduler/estimator/request_decode.h"

#include "common/json_util.h"
#include "common/quantity.h"
#include "kube/selectors.h"
#include "kube/well_known.h"
#include "kube_wire.pb.h"
#include "scheduler/kube/node_affinity.h"

namespace gleaner::scheduler::estimator {
namespace {

// The pieces of one component, whichever message (and Karmada version) carried them.
struct Parts {
  const pb::NodeClaim* claim = nullptr;
  const google::protobuf::Map<std::string, std::string>* requests = nullptr;
  std::string priority_class;
  int replicas = 1;
};

using Terms = std::vector<std::vector<LabelRequirement>>;

// A NodeSelector's protobuf bytes as node affinity terms, read by the same vocabulary as a
// pod's nodeSelectorTerms (kube/selectors.h), so Gt and Lt mean what they mean to
// kube-scheduler; Karmada's estimator matches nodes with the same helper
// (karmada pkg/estimator/server/nodes/filter.go, GetRequiredNodeAffinity). A malformed
// expression is an error naming the field; matchFields, which gleaner does not model, is no
// opinion.
Result<Terms> affinity_terms(const std::string& bytes, const std::string& field,
                             std::string& no_opinion) {
  gleaner::kubewire::NodeSelector selector;
  if (!selector.ParseFromString(bytes)) return invalid_field(field, "not a NodeSelector");
  Json terms = Json::array();
  for (const auto& term : selector.nodeselectorterms()) {
    if (term.matchfields_size() > 0) no_opinion = field + ": matchFields is not modelled";
    Json exprs = Json::array();
    for (const auto& r : term.matchexpressions()) {
      Json e = {{"key", r.key()}, {"operator", r.operator_()}};
      if (r.values_size() > 0) {
        e["values"] = Json::array();
        for (const auto& v : r.values())
          e["values"].push_back(v);
      }
      exprs.push_back(std::move(e));
    }
    terms.push_back({{"matchExpressions", std::move(exprs)}});
  }
  return kube::node_selector_terms(terms, field + ".nodeSelectorTerms");
}

Result<Json> tolerations_json(const google::protobuf::RepeatedPtrField<std::string>& list,
                              const std::string& field) {
  Json out = Json::array();
  for (int i = 0; i < list.size(); ++i) {
    gleaner::kubewire::Toleration t;
    if (!t.ParseFromString(list.Get(i))) {
      return invalid_field(field + "[" + std::to_string(i) + "]", "not a Toleration");
    }
    Json j = {{"key", t.key()}, {"operator", t.operator_()}, {"value", t.value()}};
    if (!t.effect().empty()) j["effect"] = t.effect();
    out.push_back(std::move(j));
  }
  return out;
}

// Where the component's pods may go: nodeSelector, required node affinity, tolerations.
Result<NodeSelector> selector_of(const pb::NodeClaim* claim, const std::string& field,
                                 std::string& no_opinion) {
  Json spec = Json::object();
  Terms terms;
  if (claim != nullptr) {
    if (!claim->nodeselector().empty()) {
      spec["nodeSelector"] = Json::object();
      for (const auto& [k, v] : claim->nodeselector())
        spec["nodeSelector"][k] = v;
    }
    const bool current = !claim->nodeaffinitybytes().empty();
    const std::string& affinity =
        current ? claim->nodeaffinitybytes() : claim->legacynodeaffinity();
    if (!affinity.empty()) {
      auto a = affinity_terms(affinity, field + (current ? ".nodeAffinityBytes" : ".nodeAffinity"),
                              no_opinion);
      if (!a) return a.error();
      terms = std::move(*a);
    }
    const bool current_t = claim->tolerationsbytes_size() > 0;
    auto t = tolerations_json(current_t ? claim->tolerationsbytes() : claim->legacytolerations(),
                              field + (current_t ? ".tolerationsBytes" : ".tolerations"));
    if (!t) return t.error();
    spec["tolerations"] = std::move(*t);
  }
  if (!no_opinion.empty()) return NodeSelector{};
  auto selector = kube_glue::node_selector_of(spec, field);
  if (!selector) return invalid_field(field, selector.error().message);
  selector->terms = std::move(terms);
  auto tolerations = kube_glue::tolerations_of(spec, field);
  if (!tolerations) return invalid_field(field, tolerations.error().message);
  selector->tolerations = {std::move(*tolerations)};
  return selector;
}

Result<ComponentDemand> component(const Parts& p, const std::string& name, const std::string& field,
                                  const DecodePolicy& policy, std::string& no_opinion) {
  if (p.replicas < 0 || p.replicas > policy.max_replicas) {
    return invalid_field(field + ".replicas", std::to_string(p.replicas) + " is outside 0.." +
                                                  std::to_string(policy.max_replicas));
  }
  ComponentDemand c;
  c.name = name;
  c.replicas = p.replicas;
  const bool batch_class = policy.batch_classes.count(p.priority_class) != 0;
  if (p.requests != nullptr) {
    for (const auto& [resource, bytes] : *p.requests) {
      const std::string at = std::string(field).append("[").append(resource).append("]");
      gleaner::kubewire::Quantity wire;
      if (!wire.ParseFromString(bytes)) return invalid_field(at, "not a Quantity");
      auto q = Quantity::parse(wire.string());
      if (!q) return invalid_field(at, q.error().message);
      if (q->milli_value() < 0) return invalid_field(at, "negative");
      if (resource == kube::kResourceBatchCpu) {
        c.batch.cpu_milli += q->value();  // batch-cpu counts millicores
      } else if (resource == kube::kResourceBatchMemory) {
        c.batch.memory_bytes += q->value();
      } else if (resource == "cpu" || resource == "memory") {
        if (!batch_class) {
          no_opinion = at + ": priority class \"" + p.priority_class + "\" is not a batch class";
        } else if (resource == "cpu") {
          c.batch.cpu_milli += q->milli_value();
        } else {
          c.batch.memory_bytes += q->value();
        }
      } else if (resource != "pods" && resource != "ephemeral-storage") {
        no_opinion = at + ": not a resource gleaner models";
      }
    }
  }
  auto selector = selector_of(p.claim, field + ".nodeClaim", no_opinion);
  if (!selector) return selector.error();
  c.selector = std::move(*selector);
  return c;
}

template <typename Requirements>
Parts parts_of(const Requirements& r, int replicas, std::string priority_class) {
  Parts p;
  p.claim = r.has_nodeclaim() ? &r.nodeclaim() : nullptr;
  p.requests =
      r.resourcerequestbytes().empty() ? &r.legacyresourcerequest() : &r.resourcerequestbytes();
  p.priority_class = std::move(priority_class);
  p.replicas = replicas;
  return p;
}

Result<ComponentSet> components(const google::protobuf::RepeatedPtrField<pb::Component>& list,
                                const std::string& field, const DecodePolicy& policy,
                                std::string& no_opinion) {
  if (list.size() > policy.max_components) {
    return invalid_field(field, std::to_string(list.size()) + " components, at most " +
                                    std::to_string(policy.max_components));
  }
  ComponentSet set;
  for (int i = 0; i < list.size(); ++i) {
    const pb::Component& c = list.Get(i);
    const auto& r = c.replicarequirements();
    auto d = component(parts_of(r, c.replicas(), r.priorityclassname()), c.name(),
                       field + "[" + std::to_string(i) + "]", policy, no_opinion);
    if (!d) return d.error();
    set.push_back(std::move(*d));
  }
  return set;
}

Status add_assumed(const google::protobuf::RepeatedPtrField<pb::AssumedWorkload>& list,
                   const DecodePolicy& policy, Decoded& out) {
  for (int i = 0; i < list.size(); ++i) {
    std::string ignored;  // an assumed workload we cannot model is not subtracted
    auto set =
        components(list.Get(i).components(),
                   "assumedWorkloads[" + std::to_string(i) + "].components", policy, ignored);
    if (!set) return set.error();
    if (ignored.empty()) out.assumed.push_back(std::move(*set));
  }
  return ok_status();
}

}  // namespace

Result<Decoded> decode(const pb::MaxAvailableReplicasRequest& request, const DecodePolicy& policy) {
  Decoded out;
  out.cluster = request.cluster();
  const auto& r = request.replicarequirements();
  auto c = component(parts_of(r, 1, r.priorityclassname()), "replica", "replicaRequirements",
                     policy, out.no_opinion);
  if (!c) return c.error();
  out.set.push_back(std::move(*c));
  if (Status s = add_assumed(request.assumedworkloads(), policy, out); !s) return s.error();
  return out;
}

Result<Decoded> decode(const pb::MaxAvailableComponentSetsRequest& request,
                       const DecodePolicy& policy) {
  Decoded out;
  out.cluster = request.cluster();
  auto set = components(request.components(), "components", policy, out.no_opinion);
  if (!set) return set.error();
  out.set = std::move(*set);
  if (Status s = add_assumed(request.assumedworkloads(), policy, out); !s) return s.error();
  return out;
}

}  // namespace gleaner::scheduler::estimator
