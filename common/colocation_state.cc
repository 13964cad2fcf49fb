#include "common/colocation_state.h"

namespace gleaner {

const char* to_string(ColocationState state) {
  switch (state) {
    case ColocationState::kEnabled:
      return "enabled";
    case ColocationState::kDisabled:
      return "disabled";
    case ColocationState::kDegraded:
      return "degraded";
  }
  return "disabled";
}

}  // namespace gleaner
