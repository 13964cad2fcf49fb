#pragma once
// The table of QoS strategies the engine runs, in order. The built-in ones are listed in
// strategy_table.cc, one line each; register_strategy adds one more after them (a strategy
// compiled into a binary of its own, such as a test's).

#include <functional>
#include <memory>
#include <vector>

#include "agent/qos/strategy.h"

namespace gleaner::agent::qos {

using StrategyFactory = std::function<std::unique_ptr<Strategy>()>;

// A fresh instance of every strategy, built-in ones first, in the table's order.
std::vector<std::unique_ptr<Strategy>> make_strategies();

// Adds a strategy after the built-in ones, for every engine made from then on. Returns
// true, so that a file can register its strategy in one line at static initialisation:
//   const bool registered = register_strategy([] { return std::make_unique<Mine>(); });
bool register_strategy(StrategyFactory factory);

}  // namespace gleaner::agent::qos
