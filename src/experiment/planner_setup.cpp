#include "experiment/planner_setup.hpp"

#include "experiment/trial_shape.hpp"

namespace packtune {

packing::ActorSpec PlannerSetup::actor(int id, const std::string& device, std::int64_t capacity_bytes,
                                       std::int64_t base_bytes) const {
  packing::ActorSpec a;
  a.id = id;
  a.device = device;
  a.capacity_bytes = capacity_bytes;
  a.base_bytes = base_bytes;
  a.max_members = max_members;
  a.max_units = packing::units_per_actor(mixed_packs, device);
  return a;
}

PlannerSetup planner_setup(const ExperimentConfig& config) {
  PlannerSetup setup;
  setup.options.fuse = config.fuse;
  setup.options.headroom = 0.1;  // allocator fragmentation and the framework's own buffers
  // A shape's first trials are placed by the prior while their actor profiles it
  // (driver/profile_gate.hpp), and on this CPU the profiles mostly keep units single
  // (docs/planner.md): the prior says the same, so the first units need no undoing.
  setup.options.cpu_step_overhead_seconds = 0;
  setup.max_members = config.max_pack;
  // Units stepped side by side on one GPU, each on its own CUDA stream, did not repeat bit for
  // bit across runs (docs/reproducibility.md); one unit at a time did.
  setup.mixed_packs = config.deterministic ? packing::MixedPacks::Never : config.mixed_packs;
  return setup;
}

packing::Planner make_planner(const ExperimentConfig& config, const PlannerSetup& setup) {
  packing::Planner planner({}, setup.options);
  planner.memory_model().set_scale(config.memory_estimate_scale);
  return planner;
}

std::vector<packing::ActorSpec> planned_actors(const ExperimentConfig& config, const PlannerSetup& setup,
                                               const std::vector<ActorGroup>& groups, std::int64_t base_bytes) {
  std::vector<ActorGroup> all = groups;
  if (all.empty() && config.actors > 0) all.push_back({config.actors, config.device, 0});
  std::int64_t unsized_cpu = 0;
  for (auto& g : all) {
    if (g.device.empty()) g.device = config.device;
    if (g.capacity_bytes == 0 && config.actor_memory > 0) g.capacity_bytes = config.actor_memory;
    if (g.capacity_bytes == 0 && packing::device_class(g.device) == "cpu") unsized_cpu += g.count;
  }
  const std::int64_t share = unsized_cpu > 0 ? available_memory_bytes() / unsized_cpu : 0;
  std::vector<packing::ActorSpec> actors;
  for (const auto& g : all) {
    const auto capacity = g.capacity_bytes > 0 || packing::device_class(g.device) != "cpu" ? g.capacity_bytes : share;
    for (std::int64_t i = 0; i < g.count; ++i) {
      actors.push_back(setup.actor(static_cast<int>(actors.size()), g.device, capacity, base_bytes));
    }
  }
  return actors;
}

}  // namespace packtune
