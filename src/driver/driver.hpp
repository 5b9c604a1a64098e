#pragma once
// The driver of `packtune run`: runs the tuner, places its jobs on actors, collects
// reports into the results directory, and restarts the trials of actors that die.
#include <string>

#include "experiment/experiment_config.hpp"

namespace packtune {

struct DriverOptions {
  std::string out_dir;
  bool quiet = false;    // warnings and the final summary only (docs/status.md)
  bool verbose = false;  // the planner's and profiler's workings on the console too (driver.log has them)
  // Continue the experiment in out_dir from its journal (docs/faults.md); the caller checked
  // that `config` is the one it ran with.
  bool resume = false;
  // Measure every throughput profile again instead of taking the cache's (the new ones are
  // kept there); docs/planner.md#the-profile-cache.
  bool fresh_profiles = false;
};

// The journal of an experiment's results folder, DIR/journal.jsonl.
std::string journal_path(const std::string& out_dir);

// Returns the process exit code. Throws Error for failures that end the experiment.
int run_experiment(const ExperimentConfig& config, const DriverOptions& options);

}  // namespace packtune
