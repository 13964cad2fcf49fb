#pragma once
// yield_bench's results and their table: per configuration, each round's run, and the
// figures over the rounds with their ratio to the same round's kubelet run (a). Pure: it
// measures nothing.
#include <cstdint>
#include <string>
#include <vector>

namespace gleaner::bench::yield {

struct Run {
  std::vector<double> latency_us;  // each LS wake-up: deadline to running again
  double be_cores = 0;
  double ls_cores = 0;
  double harvest = 0;  // BE cores / (CPUs - LS cores)
  uint64_t ls_slice_ns = 0;
  uint64_t be_slice_ns = 0;
};

struct Config {
  char letter;  // '0' LS alone, 'a' kubelet, 'A' kubelet again (the A/A twin), 'b'..'e'
  std::string name;
  std::vector<Run> runs;  // one per round, in round order
};

// The verdict on a configuration's p99 against kubelet's (a), bounded by the A/A twin:
// "better" or "worse" only when every round's ratio lies beyond every round's ratio of the
// twin (A over a); otherwise "indistinguishable". Without a twin there is no floor and no
// verdict ("no A/A floor").
std::string p99_verdict(const Config& c, const Config* kubelet, const Config* twin);

// Prints the markdown table of `configs` and its notes.
void print_report(const std::vector<Config>& configs, int cpus);

}  // namespace gleaner::bench::yield
