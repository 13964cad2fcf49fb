#include "agent/config/label_selector.h"

#include <utility>

namespace gleaner::agent::config {

void read_label_selector(FieldReader& reader, const Json& obj, const std::string& path,
                         LabelSelector& out) {
  auto selector = LabelSelector::from_json(obj, path, FieldNames::kAnyCase);
  if (!selector) return reader.fail(selector.error());
  out = std::move(*selector);
}

}  // namespace gleaner::agent::config
