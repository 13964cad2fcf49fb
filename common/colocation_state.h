#pragma once
// Whether a node offers batch capacity: the agent's batch calculation decides it, the
// metrics registry exports it. One vocabulary for both.

namespace gleaner {

enum class ColocationState { kEnabled, kDisabled, kDegraded };
// "enabled", "disabled" or "degraded".
const char* to_string(ColocationState state);

}  // namespace gleaner
