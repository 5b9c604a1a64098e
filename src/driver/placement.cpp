#include "driver/placement.hpp"

#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "driver/actor_registry.hpp"

namespace packtune {

namespace {

std::string unit_name(std::int64_t unit_id) { return "u" + std::to_string(unit_id); }

}  // namespace

Placement::Placement(const ExperimentConfig& config)
    : max_pack_(config.max_pack),
      asked_mixed_packs_(config.mixed_packs),
      setup_(planner_setup(config)),
      planner_(make_planner(config, setup_)) {}

void Placement::update_actors(const ActorRegistry& registry) {
  stale_ = false;
  std::map<int, packing::ActorPlan> previous;
  for (auto& a : plan_.actors) previous[a.actor.id] = std::move(a);
  plan_.actors.clear();
  for (const auto& spec : registry.capacities(setup_.max_members, setup_.mixed_packs)) {
    packing::ActorPlan a = previous.count(spec.id) ? std::move(previous[spec.id]) : packing::ActorPlan{};
    a.actor = spec;
    planner_.refresh(a);
    plan_.actors.push_back(std::move(a));
  }
}

// Otherwise a user who asked for packs of 8 sees one trial per actor and cannot tell why.
std::string Placement::explain_units(const std::string& device) {
  const auto kind = packing::device_class(device);
  if (max_pack_ <= 1 || !explained_.insert(kind).second) return "";
  if (packing::units_per_actor(setup_.mixed_packs, device) > 1) return "";
  return fmt::format(
      "{} actors train one unit (a model, or trials fused into one) at a time, as mixed_packs {} says{}; "
      "\"mixed_packs\": \"always\" packs units side by side",
      kind, to_string(asked_mixed_packs_),
      setup_.mixed_packs == packing::MixedPacks::Auto
          ? " (units on a CPU take turns on its cores: a second one adds no throughput and delays the first)"
          : "");
}

std::int64_t Placement::free_slots() { return static_cast<std::int64_t>(parked_.size()) + planner_.free_slots(plan_); }

std::optional<int> Placement::place(const packing::TrialDemand& demand, packing::Unplaced* why) {
  return planner_.place(plan_, demand, why);
}

RungPlacement Placement::replan_rung(const std::vector<packing::TrialDemand>& demands) {
  return packtune::replan_rung(planner_, plan_, demands);
}

Placement::Started Placement::start(int actor, TrialId trial, bool park) {
  const auto* unit = planner_.unit_of(plan_, trial);
  Started started{unit_name(unit->id), unit->solo};
  parked_.assigned(trial, park);
  units_started_.insert({actor, started.unit});
  return started;
}

Placement::Released Placement::end_pass() {
  Released out;
  for (const auto& [id, actor] : parked_.all()) {
    const auto* unit = planner_.unit_of(plan_, id);
    if (unit && units_started_.count({actor, unit_name(unit->id)})) out.emplace_back(id, actor);
  }
  units_started_.clear();
  for (const auto& [id, actor] : out) release(id);
  return out;
}

void Placement::ended(TrialId trial, std::optional<int> parked_on) {
  parked_.ended(trial, parked_on);
  if (!parked_on) planner_.remove(plan_, trial);
}

void Placement::out_of_memory(const std::string& shape_key, const std::vector<TrialId>& trials) {
  if (trials.empty()) return;
  planner_.memory_model().correct_upward(shape_key, 2.0);
  for (const auto id : trials) planner_.remove(plan_, id);
  for (auto& a : plan_.actors) planner_.refresh(a);
}

std::int64_t Placement::record_measurement(const packing::TrialShape& shape, int members, std::int64_t peak_bytes) {
  const auto before = planner_.memory_model().estimate(shape, members).peak();
  planner_.memory_model().record_measurement(shape, members, peak_bytes);
  for (auto& a : plan_.actors) planner_.refresh(a);
  return before;
}

Placement::Unparked Placement::unpark(TrialId trial, const std::string& shape_key, bool actor_live) {
  const auto parked_on = parked_.actor_of(trial);
  if (!parked_on) return {};
  const int actor_id = *parked_on;
  for (const auto& a : plan_.actors) {
    if (a.actor.id != actor_id || !actor_live) continue;
    for (const auto& unit : a.units) {
      for (const auto& member : unit.members) {
        if (member.trial != trial) continue;
        // An exploit may bring another shape (the donor's sampled widths or batch size): it is
        // placed anew, and its unit goes on without it.
        if (member.shape.key == shape_key) {
          parked_.unpark(trial);
          return {actor_id, std::nullopt};
        }
        release(trial);
        return {std::nullopt, actor_id};
      }
    }
  }
  release(trial);
  return {};
}

Placement::Released Placement::release_unqueued(const std::set<TrialId>& queued) {
  Released out;
  for (const auto& [id, actor] : parked_.all()) {
    if (!queued.count(id)) out.emplace_back(id, actor);
  }
  for (const auto& [id, actor] : out) release(id);
  return out;
}

void Placement::release(TrialId trial) {
  parked_.unpark(trial);
  planner_.remove(plan_, trial);
}

}  // namespace packtune
