#pragma once
// The kubelet cgroup paths the cgroup-layer tests build their trees with.

#include <string>

namespace gleaner::cgroup::test {

inline const std::string kBe = "kubepods/besteffort";
inline const std::string kPod = "kubepods/besteffort/podabc";

}  // namespace gleaner::cgroup::test
