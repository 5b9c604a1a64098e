// The planner's unit estimates: the padded shape a fused unit trains at, what a unit costs
// per step and in memory on an actor, the useful size of a fused unit, whether an item fits
// an actor and which unit it should join. Every placement (first fit, least loaded, balance)
// asks these; they change no plan.
#include <algorithm>
#include <limits>
#include <string_view>
#include <tuple>

#include "packing/planner.hpp"

namespace packtune::packing {

double Planner::total_steps(const std::vector<TrialDemand>& members) {
  double s = 0;
  for (const auto& m : members) s += m.steps;
  return s;
}

const std::string& Planner::fusion_key(const TrialShape& shape) {
  return shape.fusion.empty() ? shape.key : shape.fusion;
}

TrialShape Planner::padded_shape(const std::vector<TrialDemand>& members) {
  const TrialShape* widest = &members.front().shape;
  for (const auto& m : members) {
    if (m.shape.parameters > widest->parameters ||
        (m.shape.memory_unknown && m.shape.width_rank > widest->width_rank)) {
      widest = &m.shape;
    }
  }
  TrialShape s = *widest;
  for (const auto& m : members) {
    s.largest_parameter = std::max(s.largest_parameter, m.shape.largest_parameter);
    s.activations_per_sample = std::max(s.activations_per_sample, m.shape.activations_per_sample);
    s.flops_per_sample = std::max(s.flops_per_sample, m.shape.flops_per_sample);
    s.optimizer_slots = std::max(s.optimizer_slots, m.shape.optimizer_slots);
    s.own_batch_values = std::max(s.own_batch_values, m.shape.own_batch_values);
    s.weight_decay = s.weight_decay || m.shape.weight_decay;
    s.adaptive = s.adaptive || m.shape.adaptive;
  }
  return s;
}

bool Planner::takes_more(const ActorPlan& a) const {
  if (a.members() >= a.actor.max_members) return false;
  if (static_cast<int>(a.units.size()) < a.actor.max_units) return true;
  if (options_.fuse == FuseMode::Never) return false;
  return std::any_of(a.units.begin(), a.units.end(), [&](const PlannedUnit& u) {
    return !u.solo && (options_.fuse == FuseMode::Always ||
                       static_cast<int>(u.members.size()) < useful_members(u.shape, a.actor.device));
  });
}

double Planner::step_seconds(const TrialShape& shape, int members, const std::string& device) const {
  return throughput_.step_seconds(device, shape, members);
}

int Planner::useful_members(const TrialShape& shape, const std::string& device) const {
  if (options_.fuse == FuseMode::Never || !shape.fuses) return 1;
  // Until an actor measured it, nothing says what two members would need.
  if (model_.unmeasured(shape)) return 1;
  if (options_.fuse == FuseMode::Always) return 4096;
  // Looked up without building a key: the index asks this of every fused unit it files.
  const auto kind = std::string_view(device).substr(0, device.find(':'));
  if (auto hit = useful_cache_.find(std::make_tuple(kind, std::string_view(shape.key), shape.flops_per_sample));
      hit != useful_cache_.end()) {
    return hit->second;
  }
  int k = 1;
  // Throughput k / t(k) rises with k while the fixed cost per step still dominates.
  while (k < 4096) {
    const double now = k / step_seconds(shape, k, device);
    const double next = (k + 1) / step_seconds(shape, k + 1, device);
    if (next < now * (1 + options_.min_gain)) break;
    ++k;
  }
  useful_cache_.emplace(std::make_tuple(std::string(kind), shape.key, shape.flops_per_sample), k);
  return k;
}

double Planner::unit_seconds(const PlannedUnit& unit, const std::string& device) const {
  const int k = static_cast<int>(unit.members.size());
  // Each member pays its share of the fused step for as many steps as it trains.
  return total_steps(unit.members) * step_seconds(unit.shape, k, device) / k;
}

std::int64_t Planner::usable(const ActorSpec& actor) const {
  if (actor.capacity_bytes <= 0) return std::numeric_limits<std::int64_t>::max();
  return static_cast<std::int64_t>(static_cast<double>(actor.capacity_bytes) * (1.0 - options_.headroom));
}

void Planner::derive(ActorPlan& actor, int stale) const {
  actor.persistent_bytes = 0;
  actor.largest_transient = 0;
  actor.estimated_seconds = 0;
  actor.member_count = 0;
  for (std::size_t u = 0; u < actor.units.size(); ++u) {
    auto& unit = actor.units[u];
    actor.member_count += static_cast<int>(unit.members.size());
    if (stale == kEveryUnit || static_cast<std::size_t>(stale) == u) {
      unit.shape = padded_shape(unit.members);
      unit.estimate = model_.estimate(unit.shape, static_cast<int>(unit.members.size()));
    }
    actor.persistent_bytes += unit.estimate.persistent;
    actor.largest_transient = std::max(actor.largest_transient, unit.estimate.transient);
    actor.estimated_seconds += unit_seconds(unit, actor.actor.device);
  }
  actor.estimated_bytes = actor.actor.base_bytes + actor.persistent_bytes + actor.largest_transient;
}

bool Planner::fits(const ActorPlan& actor, int unit, const std::vector<TrialDemand>& item,
                   const UnitEstimate* alone) const {
  const int k = static_cast<int>(item.size());
  if (actor.members() + k > actor.actor.max_members) return false;
  if (unit < 0 && static_cast<int>(actor.units.size()) >= actor.actor.max_units) return false;
  // A shape whose memory is unmeasured (its figure is 0) would share an actor blindly: it
  // trains alone, one member on an actor with nothing else, until an actor measured it.
  const auto unmeasured = [&](const TrialDemand& m) { return model_.unmeasured(m.shape); };
  if (std::any_of(item.begin(), item.end(), unmeasured) && (k > 1 || unit >= 0 || !actor.units.empty())) return false;
  for (const auto& u : actor.units) {
    if (std::any_of(u.members.begin(), u.members.end(), unmeasured)) return false;
  }
  if (actor.actor.capacity_bytes <= 0) return true;
  std::int64_t persistent = actor.persistent_bytes;
  UnitEstimate added;
  if (unit >= 0) {
    const auto& old = actor.units[static_cast<std::size_t>(unit)];
    auto grown = old.members;
    grown.insert(grown.end(), item.begin(), item.end());
    added = model_.estimate(padded_shape(grown), static_cast<int>(grown.size()));
    persistent -= old.estimate.persistent;
  } else {
    added = alone ? *alone : model_.estimate(padded_shape(item), k);
  }
  // A grown unit's transient is at least its old one, so the maximum stays exact.
  const auto transient = std::max(actor.largest_transient, added.transient);
  return actor.actor.base_bytes + persistent + added.persistent + transient <= usable(actor.actor);
}

int Planner::joinable(const ActorPlan& a, const std::vector<TrialDemand>& item) const {
  if (options_.fuse == FuseMode::Never) return -1;
  const auto& key = fusion_key(item.front().shape);
  PlannedUnit own;
  own.members = item;
  own.shape = padded_shape(item);
  const double own_seconds = unit_seconds(own, a.actor.device);
  int best = -1;
  double best_added = 0;
  for (std::size_t u = 0; u < a.units.size(); ++u) {
    const auto& unit = a.units[u];
    if (unit.solo || unit.key != key) continue;
    PlannedUnit grown = unit;
    grown.members.insert(grown.members.end(), item.begin(), item.end());
    grown.shape = padded_shape(grown.members);
    const int size = static_cast<int>(grown.members.size());
    const double added = unit_seconds(grown, a.actor.device) - unit_seconds(unit, a.actor.device);
    if (options_.fuse == FuseMode::Auto) {
      // Joining must pay against a unit of its own, padding included, and stay within the
      // size where the padded shape's throughput saturates.
      if (size > useful_members(grown.shape, a.actor.device) || added >= own_seconds * (1 - options_.min_gain)) continue;
    }
    if (best < 0 || added < best_added) {
      best = static_cast<int>(u);
      best_added = added;
    }
  }
  return best;
}

}  // namespace packtune::packing
