#pragma once
// The frontier's method, apart from any measurement: the order of a round, and the statistics
// that turn windows into verdicts. Pure (no clock, no files), so bench_test checks it.
//
// Why rounds: a fixed run order charges whatever drifts over a run (memory state, page cache,
// other tenants of the machine) to the configuration that runs last, and a noisy LS-alone
// baseline makes every ratio look good. So each round runs every configuration once in a
// shuffled order, LS alone among them (twice: "LS alone" and its A/A twin), and a ratio is taken
// round by round against the LS-alone window of the same round (paired), then summarised by its
// geometric mean with a bootstrap interval over rounds. The A/A pair (LS alone against LS alone)
// says how far from 1 a ratio lands by chance on this machine: a ratio inside that floor is
// "indistinguishable", never "met".

#include <cstdint>
#include <string>
#include <vector>

namespace gleaner::bench::frontier {

// The order of `n` configurations in round `round` of a run seeded with `seed`: a permutation
// of 0..n-1, the same for the same (seed, round), different rounds shuffled independently.
std::vector<int> round_order(int n, uint64_t seed, int round);

// A paired ratio: exp(mean over rounds of log(a[r] / ref[r])), with a 95% bootstrap interval
// (rounds resampled with replacement, `resamples` times, seeded). Rounds where either value is
// not positive are left out; with none left the estimate is 0 and `rounds` is 0.
struct RatioEstimate {
  double ratio = 0;
  double low = 0, high = 0;
  int rounds = 0;
};
RatioEstimate paired_ratio(const std::vector<double>& a, const std::vector<double>& ref,
                           uint64_t seed, int resamples = 2000);

// How far from 1 a ratio lands by chance: the A/A interval's farther end, as a factor >= 1
// (an A/A estimate of 0.97 [0.90-1.06] gives 1/0.90 = 1.11).
double aa_floor(const RatioEstimate& aa);

enum class Verdict { kBetter, kIndistinguishable, kWorse, kNoVerdict };
const char* to_string(Verdict v);
// A ratio against its reference: better or worse only when its whole interval lies on one side
// of 1 and the estimate is beyond the A/A floor; otherwise indistinguishable. kNoVerdict for an
// invalid run or an estimate without rounds.
Verdict judge(const RatioEstimate& r, double floor, bool run_valid);

// The LS-alone baseline of a run: the spread of its windows' p99 (max / min) and whether it is
// tight enough to judge anything by (spread <= max_spread).
struct Baseline {
  double min_p99 = 0, max_p99 = 0;
  double spread = 0;
  bool valid = false;
  std::string why;  // when not valid: what was wrong, in words
};
Baseline judge_baseline(const std::vector<double>& alone_p99s, double max_spread);

}  // namespace gleaner::bench::frontier
