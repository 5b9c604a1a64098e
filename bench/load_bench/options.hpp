#pragma once
// load_bench's command line: what to simulate (actors, trials, budgets, objective, sampler) and
// how to run the driver; the defaults are the figures docs/benchmarks.md reports.
#include <cstdint>
#include <string>

#ifndef PACKTUNE_BINARY
#define PACKTUNE_BINARY "packtune"
#endif

namespace packtune::bench {

struct Options {
  int actors = 1000;
  // With nodes: `nodes` simulated machines of `actors_per_node` actors each, every machine's
  // actors over its one connection (node/node_relay.hpp); actors = nodes * actors_per_node.
  int nodes = 0;
  int actors_per_node = 0;
  std::int64_t trials = 100000;
  // Wall seconds per simulated second. 0.25: a 100,000-trial sweep takes about a minute
  // and a job a quarter of a second, so the driver sees about 2,400 jobs a second, which is
  // what is measured, while timer and scheduling noise stays small against a job.
  double time_scale = 0.25;
  double min_budget = 1;  // simulated seconds: every trial's first job
  double max_budget = 9;
  int eta = 3;
  double report_every = 0;  // simulated seconds between intermediate reports; 0: final only
  std::string objective = "synthetic";
  // ASHA's sampler: tpe makes the driver model the results for every new trial's config.
  std::string sampler = "random";
  std::uint64_t seed = 1;
  double heartbeat_seconds = 1;
  bool driver_quiet = false;
  std::string packtune = PACKTUNE_BINARY;
  std::string keep;  // keep the run's folder (config, driver log, results) here
  // The driver's limit of open files (ulimit -n, soft and hard), which sizes its connection
  // cap (docs/security.md); 0: this process's. Set with more actors than the cap, the run
  // measures how the driver degrades: the first ones train and the rest are refused.
  int driver_open_files = 0;
};

// Exits with the usage (status 2) on --help and on any option it cannot take.
Options parse_options(int argc, char** argv);

}  // namespace packtune::bench
