#pragma once
// Figures published by other projects that the benchmarks print beside their own.

namespace gleaner::bench {

// koordlet, Koordinator's node agent: its published resource use and its Helm chart limit.
inline constexpr const char* kKoordletPublished =
    "koordlet's published figures: about 0.5 core (50% of a core) and 340 MiB RSS at 150 pods; "
    "its Helm chart limits it to 200m CPU and 256 MiB";

}  // namespace gleaner::bench
