#pragma once
// The planner as `packtune run` sets it up from a config, in one place for the driver and
// `packtune plan`, so that a plan shows the units and the waits a run makes: the planner's
// options (fuse, headroom, the prior a shape has before its profile) and what limits an
// actor (max_pack trials, the units mixed_packs lets it train side by side).
#include <cstdint>
#include <string>
#include <vector>

#include "experiment/actor_groups.hpp"
#include "experiment/experiment_config.hpp"
#include "packing/planner.hpp"

namespace packtune {

struct PlannerSetup {
  packing::PlanOptions options;
  int max_members = 1;
  packing::MixedPacks mixed_packs = packing::MixedPacks::Auto;

  // An actor with the config's limits. `capacity_bytes` 0: unknown, only the limits apply.
  packing::ActorSpec actor(int id, const std::string& device, std::int64_t capacity_bytes,
                           std::int64_t base_bytes) const;
};

PlannerSetup planner_setup(const ExperimentConfig& config);

// The planner a run plans with and `packtune plan` shows: the setup's options and the
// config's memory_estimate_scale. Before any profile or measurement, the same config gives
// the same plan in both.
packing::Planner make_planner(const ExperimentConfig& config, const PlannerSetup& setup);

// The actors `packtune plan` plans for: `groups` (--actors), or with none the config's
// local actors. A group without a size gets actor_memory when the config sets it; else CPU
// actors share this machine's available memory equally, as a run's local actors do, and a
// GPU's size is unknown here (0). Every actor holds `base_bytes` before its first trial.
std::vector<packing::ActorSpec> planned_actors(const ExperimentConfig& config, const PlannerSetup& setup,
                                               const std::vector<ActorGroup>& groups, std::int64_t base_bytes);

}  // namespace packtune
