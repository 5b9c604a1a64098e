#pragma once
// The experiment load_bench has the driver run, and the same experiment simulated without a
// control plane: the schedule whose makespan is the minimum the run's wall time is held to.
#include <string>

#include <nlohmann/json.hpp>

#include "bench/load_bench/options.hpp"
#include "tuners/simulate/simulator.hpp"
#include "tuners/tuner.hpp"

namespace packtune::bench {

// The driver's config: ASHA over a small space, listening on `endpoint` for actors it does
// not start, reading its (blank) data from `data_dir`.
nlohmann::json experiment_config(const Options& o, const std::string& endpoint, const std::string& data_dir);

tuners::TunerContext tuner_context(const Options& o, const nlohmann::json& config);

// The same tuner on as many workers as actors, in simulated time with nothing in between:
// the schedule's makespan and its work, in simulated seconds.
tuners::SimulationSummary simulate_schedule(const Options& o, const tuners::TunerContext& context);

}  // namespace packtune::bench
