#pragma once
// The driver of `packtune run`: runs the tuner, places its jobs on actors, collects
// reports into the results directory, and restarts the trials of actors that die.
#include <string>

#include "experiment/experiment_config.hpp"

namespace packtune {

struct DriverOptions {
  std::string out_dir;
  bool quiet = false;  // no progress lines, only the final summary
};

// Returns the process exit code. Throws Error for failures that end the experiment.
int run_experiment(const ExperimentConfig& config, const DriverOptions& options);

}  // namespace packtune
