#pragma once
// The driver of `packtune run`: runs the tuner, places its jobs on actors, collects
// reports into the results directory, and restarts the trials of actors that die.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

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
  // The fingerprints of the data files as the caller found them (datasets/data_fingerprint.hpp).
  // A new run records them in its journal's header; a resume, where the caller checked them
  // against the journal's, records them when they differ (data_changes) or the journal had none
  // (data_unchecked), so that the next resume checks against the data this one runs on.
  nlohmann::json data_files;
  // --resume --allow-changed-data: what changed since the journal recorded the data files.
  std::vector<std::string> data_changes;
  // --resume of a run whose journal records no fingerprints (an older packtune's).
  bool data_unchecked = false;
};


// Returns the process exit code. Throws Error for failures that end the experiment.
int run_experiment(const ExperimentConfig& config, const DriverOptions& options);

}  // namespace packtune
