// Balance after packing (Planner::plan with options.balance): FLEET's greedy allocation by
// estimated time, moving work from the busiest actor to the least busy one with room.
#include <cmath>
#include <cstdlib>
#include <limits>
#include <optional>
#include <set>
#include <utility>

#include "packing/planner.hpp"

namespace packtune::packing {

void Planner::balance(Plan& plan) const {
  // FLEET's greedy balance: move part of the busiest actor's work to the least busy one
  // that has room, as long as that lowers the busiest actor's estimated time. Both are
  // kept in order (ties: the first actor), so a round costs O(log actors).
  using Load = std::pair<double, std::size_t>;
  std::set<Load> busy;   // -seconds, slot: actors with at least two members
  std::set<Load> light;  // seconds, slot: actors with a free member slot
  std::vector<double> filed(plan.actors.size());
  auto unfile = [&](std::size_t i) {
    busy.erase({-filed[i], i});
    light.erase({filed[i], i});
  };
  auto file = [&](std::size_t i) {
    const auto& a = plan.actors[i];
    filed[i] = a.estimated_seconds;
    if (a.members() >= 2) busy.insert({-filed[i], i});
    // Balance moves work as a unit of its own: only actors that take one are targets.
    if (a.members() < a.actor.max_members && static_cast<int>(a.units.size()) < a.actor.max_units) {
      light.insert({filed[i], i});
    }
  };
  for (std::size_t i = 0; i < plan.actors.size(); ++i) file(i);

  std::vector<double> unit_times;
  for (std::size_t round = 0; round < plan.actors.size() * 8; ++round) {
    if (busy.empty()) return;
    const std::size_t busiest = busy.begin()->second;
    auto& from = plan.actors[busiest];
    // The part to move: the unit closest to half the busiest actor's work, or half of its
    // only unit.
    std::vector<TrialDemand> part;
    int unit = -1;
    // Each unit's seconds, summed over its members' steps: asked twice below, computed once.
    unit_times.clear();
    for (const auto& u : from.units) unit_times.push_back(unit_seconds(u, from.actor.device));
    if (from.units.size() > 1) {
      double best = std::numeric_limits<double>::max();
      for (std::size_t u = 0; u < from.units.size(); ++u) {
        const double d = std::abs(unit_times[u] - from.estimated_seconds / 2);
        if (d < best) {
          best = d;
          unit = static_cast<int>(u);
        }
      }
      part = from.units[static_cast<std::size_t>(unit)].members;
    } else {
      const auto& members = from.units.front().members;
      part.assign(members.begin() + static_cast<std::ptrdiff_t>(members.size() / 2), members.end());
    }
    std::optional<std::size_t> target;
    for (const auto& [seconds, i] : light) {
      if (i != busiest && fits(plan.actors[i], -1, part)) {
        target = i;
        break;
      }
    }
    if (!target) return;
    // The busiest actor's seconds without the part, summed as derive() would (no copy of it).
    double from_after = 0;
    if (unit >= 0) {
      for (std::size_t u = 0; u < from.units.size(); ++u) {
        if (static_cast<int>(u) != unit) from_after += unit_times[u];
      }
    } else {
      PlannedUnit rest;
      const auto& members = from.units.front().members;
      rest.members.assign(members.begin(), members.end() - static_cast<std::ptrdiff_t>(part.size()));
      rest.shape = padded_shape(rest.members);
      from_after += unit_seconds(rest, from.actor.device);
    }
    PlannedUnit moved;
    moved.members = part;
    moved.shape = padded_shape(part);
    const double target_after =
        plan.actors[*target].estimated_seconds + unit_seconds(moved, plan.actors[*target].actor.device);
    if (std::max(from_after, target_after) >= from.estimated_seconds - 1e-12) return;
    unfile(busiest);
    unfile(*target);
    if (unit >= 0) {
      from.units.erase(from.units.begin() + unit);
    } else {
      from.units.front().members.resize(from.units.front().members.size() - part.size());
    }
    derive(from, unit >= 0 ? kNoUnit : 0);
    add(plan, *target, -1, std::move(part), Mode::Unfiled);
    file(busiest);
    file(*target);
  }
}

}  // namespace packtune::packing
