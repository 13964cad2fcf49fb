#include "kube/objects.h"

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>

#include "common/json_util.h"

namespace gleaner::kube {
namespace {

// Reads typed fields out of one object, remembering the first type error. Collecting
// the first error (instead of returning at each step) keeps the field list readable.
class Reader {
 public:
  explicit Reader(std::string object) : object_(std::move(object)) {}

  void set_object(std::string object) { object_ = std::move(object); }

  // The child `key` of `parent` when present and not null.
  const Json* child(const Json* parent, const char* key) {
    if (parent == nullptr || !parent->is_object()) return nullptr;
    auto it = parent->find(key);
    if (it == parent->end() || it->is_null()) return nullptr;
    return &*it;
  }

  const Json* object(const Json* parent, const char* key, const std::string& path) {
    const Json* v = child(parent, key);
    if (v != nullptr && !v->is_object()) {
      fail(path, "an object", *v);
      return nullptr;
    }
    return v;
  }

  const Json* array(const Json* parent, const char* key, const std::string& path) {
    const Json* v = child(parent, key);
    if (v != nullptr && !v->is_array()) {
      fail(path, "an array", *v);
      return nullptr;
    }
    return v;
  }

  void string(const Json* parent, const char* key, const std::string& path, std::string& out) {
    const Json* v = child(parent, key);
    if (v == nullptr) return;
    if (!v->is_string()) return fail(path, "a string", *v);
    out = v->get<std::string>();
  }

  void int32(const Json* parent, const char* key, const std::string& path,
             std::optional<int32_t>& out) {
    const Json* v = child(parent, key);
    if (v == nullptr) return;
    if (!v->is_number_integer()) return fail(path, "an integer", *v);
    int64_t n = v->get<int64_t>();
    if (n < INT32_MIN || n > INT32_MAX) return fail_msg(path, "integer out of int32 range");
    out = static_cast<int32_t>(n);
  }

  void string_map(const Json* parent, const char* key, const std::string& path, StringMap& out) {
    const Json* v = object(parent, key, path);
    if (v == nullptr) return;
    for (const auto& [k, value] : v->items()) {
      if (!value.is_string())
        return fail(std::string(path).append(".").append(k), "a string", value);
      out[k] = value.get<std::string>();
    }
  }

  void resources(const Json* parent, const char* key, const std::string& path, ResourceList& out) {
    const Json* v = object(parent, key, path);
    if (v == nullptr) return;
    for (const auto& [name, value] : v->items()) {
      auto q = quantity_from_json(
          value, std::string(object_).append(": field ").append(path).append(".").append(name));
      if (!q) return record(q.error().message);
      out[name] = *q;
    }
  }

  void fail(const std::string& path, const char* expected, const Json& got) {
    fail_msg(path, std::string("expected ") + expected + ", got " + got.type_name());
  }
  void fail_msg(const std::string& path, const std::string& why) {
    record(object_ + ": field " + path + ": " + why);
  }
  void record(std::string message) {
    if (!failed_) error_ = make_error(ErrorCode::kParse, std::move(message));
    failed_ = true;
  }

  [[nodiscard]] bool failed() const { return failed_; }
  [[nodiscard]] const Error& error() const { return error_; }

 private:
  std::string object_;
  bool failed_ = false;
  Error error_;
};

void read_meta(Reader& r, const Json& json, ObjectMeta& meta) {
  const Json* m = r.object(&json, "metadata", "metadata");
  r.string(m, "name", "metadata.name", meta.name);
  r.string(m, "namespace", "metadata.namespace", meta.namespace_name);
  r.string(m, "uid", "metadata.uid", meta.uid);
  r.string_map(m, "labels", "metadata.labels", meta.labels);
  r.string_map(m, "annotations", "metadata.annotations", meta.annotations);
}

void read_containers(Reader& r, const Json* spec, const char* key, std::vector<Container>& out) {
  const std::string base = std::string("spec.") + key;
  const Json* list = r.array(spec, key, base);
  if (list == nullptr) return;
  for (size_t i = 0; i < list->size(); ++i) {
    const std::string path = base + "[" + std::to_string(i) + "]";
    const Json& c = (*list)[i];
    if (!c.is_object()) return r.fail(path, "an object", c);
    Container container;
    r.string(&c, "name", path + ".name", container.name);
    const Json* res = r.object(&c, "resources", path + ".resources");
    r.resources(res, "requests", path + ".resources.requests", container.resources.requests);
    r.resources(res, "limits", path + ".resources.limits", container.resources.limits);
    out.push_back(std::move(container));
  }
}

void read_statuses(Reader& r, const Json* status, const char* key,
                   std::vector<ContainerStatus>& out) {
  const std::string base = std::string("status.") + key;
  const Json* list = r.array(status, key, base);
  if (list == nullptr) return;
  for (size_t i = 0; i < list->size(); ++i) {
    const std::string path = base + "[" + std::to_string(i) + "]";
    const Json& c = (*list)[i];
    if (!c.is_object()) return r.fail(path, "an object", c);
    ContainerStatus cs;
    r.string(&c, "name", path + ".name", cs.name);
    r.string(&c, "containerID", path + ".containerID", cs.container_id);
    out.push_back(std::move(cs));
  }
}

}  // namespace

std::string Pod::key() const {
  return metadata.namespace_name + "/" + metadata.name;
}

Result<Pod> parse_pod(const Json& json) {
  if (!json.is_object()) {
    return make_error(ErrorCode::kParse,
                      std::string("pod: expected a JSON object, got ") + json.type_name());
  }
  Pod pod;
  Reader r("pod");
  read_meta(r, json, pod.metadata);
  if (r.failed()) return r.error();
  r.set_object("pod " + pod.key());

  const Json* spec = r.object(&json, "spec", "spec");
  r.string(spec, "nodeName", "spec.nodeName", pod.node_name);
  r.int32(spec, "priority", "spec.priority", pod.priority);
  r.string(spec, "priorityClassName", "spec.priorityClassName", pod.priority_class_name);
  r.string(spec, "schedulerName", "spec.schedulerName", pod.scheduler_name);
  read_containers(r, spec, "containers", pod.containers);
  read_containers(r, spec, "initContainers", pod.init_containers);
  r.resources(spec, "overhead", "spec.overhead", pod.overhead);

  const Json* status = r.object(&json, "status", "status");
  r.string(status, "phase", "status.phase", pod.phase);
  r.string(status, "qosClass", "status.qosClass", pod.qos_class);
  read_statuses(r, status, "containerStatuses", pod.container_statuses);
  read_statuses(r, status, "initContainerStatuses", pod.init_container_statuses);
  if (r.failed()) return r.error();
  pod.raw = std::make_shared<const Json>(json);
  return pod;
}

Result<Node> parse_node(const Json& json) {
  if (!json.is_object()) {
    return make_error(ErrorCode::kParse,
                      std::string("node: expected a JSON object, got ") + json.type_name());
  }
  Node node;
  Reader r("node");
  read_meta(r, json, node.metadata);
  if (r.failed()) return r.error();
  r.set_object("node " + node.metadata.name);
  const Json* status = r.object(&json, "status", "status");
  r.resources(status, "capacity", "status.capacity", node.capacity);
  r.resources(status, "allocatable", "status.allocatable", node.allocatable);
  if (r.failed()) return r.error();
  node.raw = std::make_shared<const Json>(json);
  return node;
}

Result<std::vector<Pod>> parse_pod_list(const Json& json) {
  const Json* items = &json;
  if (json.is_object()) {
    auto it = json.find("items");
    if (it == json.end() || !(it->is_array() || it->is_null())) {
      return make_error(ErrorCode::kParse, "pod list: expected a PodList with an items array");
    }
    items = &*it;
  } else if (!json.is_array()) {
    return make_error(
        ErrorCode::kParse,
        std::string("pod list: expected a PodList or an array, got ") + json.type_name());
  }
  std::vector<Pod> pods;
  if (items->is_null()) return pods;
  pods.reserve(items->size());
  for (size_t i = 0; i < items->size(); ++i) {
    auto pod = parse_pod((*items)[i]);
    if (!pod) {
      return make_error(ErrorCode::kParse,
                        "pod list item " + std::to_string(i) + ": " + pod.error().message);
    }
    pods.push_back(std::move(pod).value());
  }
  return pods;
}

Quantity pod_request(const Pod& pod, const std::string& resource) {
  auto request_of = [&](const Container& c) {
    auto it = c.resources.requests.find(resource);
    if (it != c.resources.requests.end()) return it->second.milli_value();
    // The API server defaults a missing request to the limit; objects that skipped
    // defaulting (hand-written files) get the same treatment here.
    auto lim = c.resources.limits.find(resource);
    return lim != c.resources.limits.end() ? lim->second.milli_value() : int64_t{0};
  };
  int64_t sum = 0;
  for (const auto& c : pod.containers)
    sum += request_of(c);
  int64_t init_max = 0;
  for (const auto& c : pod.init_containers)
    init_max = std::max(init_max, request_of(c));
  int64_t total = std::max(sum, init_max);
  auto oh = pod.overhead.find(resource);
  if (oh != pod.overhead.end()) total += oh->second.milli_value();
  return Quantity::from_milli(total);
}

std::optional<Quantity> pod_limit(const Pod& pod, const std::string& resource) {
  if (pod.containers.empty()) return std::nullopt;
  int64_t sum = 0;
  for (const auto& c : pod.containers) {
    auto it = c.resources.limits.find(resource);
    if (it == c.resources.limits.end()) return std::nullopt;
    sum += it->second.milli_value();
  }
  return Quantity::from_milli(sum);
}

}  // namespace gleaner::kube
