#pragma once
// load_bench's clock: the actors' report deadlines, the driver's exit and the figures are all
// taken on steady_clock and turned into seconds one way, so that they can be set against each other.
#include <chrono>

namespace packtune::bench {

using Clock = std::chrono::steady_clock;

inline double seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

}  // namespace packtune::bench
