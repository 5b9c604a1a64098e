#pragma once
// pack_bench's processes mode: K copies of this program (its hidden --worker option), one
// plain trial each, started together, as a tuner giving each trial a share of the device runs.
#include <string>

#include "bench/pack_bench/bench_pack.hpp"
#include "bench/pack_bench/options.hpp"

namespace packtune::bench {

// K workers started together; the aggregate is all their samples over the span from the
// first start to the last finish.
Rate measure_processes(const Options& o, const std::string& model, int k, int threads_each);

// One member alone: build, warm up, say "ready", wait for stdin to close (the parent's
// start signal, so that loading LibTorch is not timed), train for --seconds, report.
// steady_clock is CLOCK_MONOTONIC, one clock for every process of the machine.
int run_worker(const Options& o);

}  // namespace packtune::bench
