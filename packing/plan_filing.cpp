// How the planner files an actor in its plan's index (plan_index.hpp): the figures the index
// orders actors and fused units by, and rebuilding the index when it went stale.
#include <algorithm>
#include <cmath>

#include "packing/planner.hpp"

namespace packtune::packing {
namespace {

// Actors whose devices are of one kind price a unit alike (ThroughputModel looks up by kind;
// an empty device means any kind).
std::string device_kind(const std::string& device) { return device.empty() ? std::string() : "=" + device_class(device); }

}  // namespace

PlanIndex::Bound Planner::bound(const TrialShape& s) {
  return {s.parameters, s.largest_parameter, s.activations_per_sample, s.flops_per_sample, s.optimizer_slots,
          s.weight_decay, s.adaptive};
}

PlanIndex::Filing Planner::filing(const ActorPlan& a, const PlanIndex::Filing* before) const {
  PlanIndex::Filing f;
  f.seconds = a.estimated_seconds;
  const bool member_slot = a.members() < a.actor.max_members;
  f.open = member_slot && static_cast<int>(a.units.size()) < a.actor.max_units;
  f.kind = device_kind(a.actor.device);
  if (takes_more(a)) {
    const int units_left = std::max(1, a.actor.max_units - static_cast<int>(a.units.size()));
    f.free = std::min(a.actor.max_members - a.members(), units_left);
  }
  if (!member_slot || options_.fuse == FuseMode::Never) return f;
  std::size_t hint = 0;
  for (const auto& u : a.units) {
    if (u.solo) continue;
    const int k = static_cast<int>(u.members.size());
    PlanIndex::Filing::Unit entry;
    // A unit filed before with as many members is the same unit (every change is filed, or
    // the index rebuilt): only the actor's seconds moved.
    const PlanIndex::Filing::Unit* same = nullptr;
    if (before) {
      for (std::size_t n = 0; n < before->units.size() && !same; ++n, ++hint) {
        const auto& b = before->units[hint % before->units.size()];
        if (b.id == u.id && b.members == k) same = &b;
      }
    }
    if (same) {
      entry = *same;
    } else {
      entry.key = u.key;
      entry.members = k;
      entry.id = u.id;
      // joinable() turns a trial away from a unit at its useful size unless the trial widens it.
      entry.full = options_.fuse == FuseMode::Auto && k >= useful_members(u.shape, a.actor.device);
      entry.bound = bound(u.shape);
      entry.group = f.kind + '|' + u.shape.key + '|' + u.shape.fusion + '|' + std::to_string(u.shape.batch_size) + '|' +
                    std::to_string(k);
      for (const auto& part : {u.shape.parameters, u.shape.largest_parameter, u.shape.activations_per_sample,
                               u.shape.flops_per_sample, std::int64_t{u.shape.optimizer_slots}}) {
        entry.group += '|' + std::to_string(part);
      }
      entry.group += u.shape.weight_decay ? "|d" : "|-";
      entry.group += u.shape.adaptive ? "a" : "-";
      // unit_seconds(grown) - unit_seconds(unit) = (S + s) * next - S * now, for S the
      // members' steps and s the trial's.
      entry.steps = total_steps(u.members);
      entry.per_member_now = step_seconds(u.shape, k, a.actor.device) / k;
      entry.per_member = step_seconds(u.shape, k + 1, a.actor.device) / (k + 1);
    }
    entry.order = a.estimated_seconds + entry.steps * (entry.per_member - entry.per_member_now);
    entry.scale = std::abs(a.estimated_seconds) + entry.steps * (entry.per_member + entry.per_member_now) + 1;
    f.units.push_back(std::move(entry));
  }
  return f;
}

void Planner::refit(Plan& plan, std::size_t actor) const {
  derive(plan.actors[actor]);
  plan.index.file(actor, filing(plan.actors[actor], plan.index.filed(actor)));
}

std::int64_t Planner::free_slots(Plan& plan) const {
  index(plan);
  return plan.index.free_slots();
}

void Planner::index(Plan& plan) const {
  if (plan.index.tracks(plan.actors.size()) && plan.index.planner == id_) return;
  auto& index = plan.index;
  index.reset(plan.actors.size());
  index.planner = id_;
  for (std::size_t i = 0; i < plan.actors.size(); ++i) {
    const auto& a = plan.actors[i];
    index.file(i, filing(a));
    for (const auto& u : a.units) {
      for (const auto& m : u.members) index.place(m.trial, i);
    }
    if (a.actor.max_members < 1) continue;
    index.any_member_slot = true;
    index.largest_room = std::max(index.largest_room, usable(a.actor) - a.actor.base_bytes);
  }
}

}  // namespace packtune::packing
