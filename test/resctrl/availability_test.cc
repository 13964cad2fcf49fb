#include "resctrl/availability.h"

#include <gtest/gtest.h>

namespace gleaner::resctrl {
namespace {

// Trimmed from real machines' /proc/cpuinfo.
const char* kIntelRdt =
    "processor\t: 0\nflags\t\t: fpu vme de pse cat_l3 cdp_l3 rdt_a mba cqm_llc\n";
const char* kNoRdt = "processor\t: 0\nflags\t\t: fpu vme de pse tsc msr pae avx2\n";

TEST(ResctrlAvailability, TellsNotMountedFromNoRdtFromNoKernelSupport) {
  EXPECT_EQ(classify(true, true, kNoRdt), Availability::kMounted);
  EXPECT_EQ(classify(true, false, kIntelRdt), Availability::kNotMounted);
  EXPECT_EQ(classify(true, false, kNoRdt), Availability::kNoCpuSupport);
  EXPECT_EQ(classify(false, false, kIntelRdt), Availability::kNoKernelSupport);
  // A flag name inside another word is not the flag.
  EXPECT_EQ(classify(true, false, "flags\t: xmba rdt_ab\n"), Availability::kNoCpuSupport);
  EXPECT_STREQ(describe(Availability::kNotMounted), "not mounted (the CPU has RDT allocation)");
}

}  // namespace
}  // namespace gleaner::resctrl
