#include "common/labels.h"

namespace gleaner {

bool LabelRequirement::matches(const Labels& labels) const {
  auto it = labels.find(key);
  const bool present = it != labels.end();
  switch (op) {
    case LabelOp::kIn:
      return present && values.contains(it->second);
    case LabelOp::kNotIn:
      return !present || !values.contains(it->second);
    case LabelOp::kExists:
      return present;
    case LabelOp::kDoesNotExist:
      return !present;
  }
  return false;
}

}  // namespace gleaner
