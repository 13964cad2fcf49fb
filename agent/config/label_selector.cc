#include "agent/config/label_selector.h"

#include <algorithm>

namespace gleaner::agent::config {

bool LabelSelector::matches(const kube::StringMap& labels) const {
  for (const auto& [key, value] : match_labels) {
    auto it = labels.find(key);
    if (it == labels.end() || it->second != value) return false;
  }
  for (const auto& req : match_expressions) {
    auto it = labels.find(req.key);
    bool has = it != labels.end();
    bool in =
        has && std::find(req.values.begin(), req.values.end(), it->second) != req.values.end();
    switch (req.op) {
      case LabelRequirement::Op::kIn:
        if (!in) return false;
        break;
      case LabelRequirement::Op::kNotIn:
        if (in) return false;  // a node without the label satisfies NotIn, as in Kubernetes
        break;
      case LabelRequirement::Op::kExists:
        if (!has) return false;
        break;
      case LabelRequirement::Op::kDoesNotExist:
        if (has) return false;
        break;
    }
  }
  return true;
}

void read_label_selector(FieldReader& reader, const Json& obj, const std::string& path,
                         LabelSelector& out) {
  if (const Json* labels = reader.object(obj, path, "matchLabels")) {
    for (const auto& [key, value] : labels->items()) {
      if (!value.is_string()) {
        reader.fail(FieldReader::join(FieldReader::join(path, "matchLabels"), key),
                    std::string("expected a string, got ") + value.type_name(), ErrorCode::kParse);
        return;
      }
      out.match_labels[key] = value.get<std::string>();
    }
  }
  const Json* exprs = reader.array(obj, path, "matchExpressions");
  if (exprs == nullptr) return;
  const std::string base = FieldReader::join(path, "matchExpressions");
  for (size_t i = 0; i < exprs->size(); ++i) {
    const std::string at = FieldReader::index(base, i);
    const Json& e = (*exprs)[i];
    if (!e.is_object()) {
      return reader.fail(at, std::string("expected an object, got ") + e.type_name(),
                         ErrorCode::kParse);
    }
    LabelRequirement req;
    reader.read_string(e, at, "key", req.key);
    auto op = reader.read_enum(e, at, "operator", {"In", "NotIn", "Exists", "DoesNotExist"});
    if (reader.failed()) return;
    if (req.key.empty())
      return reader.fail(at + ".key", "must be set", ErrorCode::kInvalidArgument);
    if (!op) return reader.fail(at + ".operator", "must be set", ErrorCode::kInvalidArgument);
    req.op = static_cast<LabelRequirement::Op>(*op);
    if (const Json* values = reader.array(e, at, "values")) {
      for (size_t j = 0; j < values->size(); ++j) {
        if (!(*values)[j].is_string()) {
          return reader.fail(FieldReader::index(at + ".values", j), "expected a string",
                             ErrorCode::kParse);
        }
        req.values.push_back((*values)[j].get<std::string>());
      }
    }
    bool set_op = req.op == LabelRequirement::Op::kIn || req.op == LabelRequirement::Op::kNotIn;
    if (set_op && req.values.empty()) {
      return reader.fail(at + ".values", "must be non-empty for In and NotIn",
                         ErrorCode::kInvalidArgument);
    }
    if (!set_op && !req.values.empty()) {
      return reader.fail(at + ".values", "must be empty for Exists and DoesNotExist",
                         ErrorCode::kInvalidArgument);
    }
    out.match_expressions.push_back(std::move(req));
  }
}

}  // namespace gleaner::agent::config
