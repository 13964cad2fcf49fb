#pragma once
// The JSON type by name only (nlohmann's forward declarations), for headers that pass JSON
// by reference or pointer, declare functions returning it, or hold it behind a pointer: a
// file that includes such a header does not parse the whole JSON library unless it uses it
// (then it includes common/json_util.h itself).

#include <nlohmann/json_fwd.hpp>

namespace gleaner {

using Json = nlohmann::json;

}  // namespace gleaner
