#pragma once
// load_bench's output: the one JSON object of figures (docs/benchmarks.md names each), taken
// from the fleet's counts, the driver's resource use and the readings run() takes around them.
#include <sys/resource.h>

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "bench/load_bench/clock.hpp"
#include "bench/load_bench/driver_process.hpp"
#include "bench/load_bench/fleet.hpp"
#include "bench/load_bench/options.hpp"
#include "tuners/simulate/simulator.hpp"

namespace packtune::bench {

// What run() read around the fleet and the driver, in the order it read them.
struct RunReadings {
  double simulate_seconds = 0;  // the schedule's simulation, in this process
  double load_before = 0;
  Clock::time_point started;  // the driver spawned
  struct rusage self_before {};
  Clock::time_point joined;  // every actor welcomed, or as many as the driver's connection cap took
  CpuTimes driver_cpu_at_end;
  Counters counters_at_end;
  struct rusage self_after {};
  std::string results;  // the driver's results.jsonl
};

// The machine's one-minute load average, from /proc/loadavg.
double load_average();

// Every figure but "kept", which only run() knows.
nlohmann::json figures(const Options& o, const tuners::SimulationSummary& schedule, const Fleet& fleet,
                       const DriverProcess& driver, const RunReadings& readings);

}  // namespace packtune::bench
