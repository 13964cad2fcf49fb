#include "agent/config/label_selector.h"

#include <utility>

#include "common/json_util.h"

namespace gleaner::agent::config {

void read_label_selector(FieldReader& reader, const Json& obj, const std::string& path,
                         LabelSelector& out) {
  if (const Json* labels = reader.object(obj, path, "matchLabels")) {
    for (const auto& [key, value] : labels->items()) {
      if (!value.is_string()) {
        reader.fail(FieldReader::join(FieldReader::join(path, "matchLabels"), key),
                    std::string("expected a string, got ") + value.type_name(), ErrorCode::kParse);
        return;
      }
      out.add({key, LabelOp::kIn, {value.get<std::string>()}});
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
    constexpr LabelOp kOps[] = {LabelOp::kIn, LabelOp::kNotIn, LabelOp::kExists,
                                LabelOp::kDoesNotExist};
    req.op = kOps[*op];
    if (const Json* values = reader.array(e, at, "values")) {
      for (size_t j = 0; j < values->size(); ++j) {
        if (!(*values)[j].is_string()) {
          return reader.fail(FieldReader::index(at + ".values", j), "expected a string",
                             ErrorCode::kParse);
        }
        req.values.insert((*values)[j].get<std::string>());
      }
    }
    const bool set_op = req.op == LabelOp::kIn || req.op == LabelOp::kNotIn;
    if (set_op && req.values.empty()) {
      return reader.fail(at + ".values", "must be non-empty for In and NotIn",
                         ErrorCode::kInvalidArgument);
    }
    if (!set_op && !req.values.empty()) {
      return reader.fail(at + ".values", "must be empty for Exists and DoesNotExist",
                         ErrorCode::kInvalidArgument);
    }
    out.add(std::move(req));
  }
}

}  // namespace gleaner::agent::config
