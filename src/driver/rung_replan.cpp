#include "driver/rung_replan.hpp"

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <utility>

namespace packtune {
namespace {

// Where each planned trial trains: actor id and unit id.
using Where = std::map<std::int64_t, std::pair<int, std::int64_t>>;

Where where_each(const packing::Plan& plan) {
  Where where;
  for (const auto& a : plan.actors) {
    for (const auto& u : a.units) {
      for (const auto& m : u.members) where[m.trial] = {a.actor.id, u.id};
    }
  }
  return where;
}

}  // namespace

std::vector<packing::TrialDemand> planning_order(std::vector<packing::TrialDemand> promoted) {
  std::map<std::string, std::size_t> first_seen;
  for (const auto& t : promoted) first_seen.try_emplace(packing::Planner::fusion_key(t.shape), first_seen.size());
  std::stable_sort(promoted.begin(), promoted.end(), [&](const packing::TrialDemand& a, const packing::TrialDemand& b) {
    const auto ka = first_seen.at(packing::Planner::fusion_key(a.shape));
    const auto kb = first_seen.at(packing::Planner::fusion_key(b.shape));
    if (ka != kb) return ka < kb;
    return a.shape.flops_per_sample > b.shape.flops_per_sample;
  });
  return promoted;
}

RungPlacement replan_rung(const packing::Planner& planner, packing::Plan& plan,
                          const std::vector<packing::TrialDemand>& promoted) {
  RungPlacement out;
  const auto ordered = planning_order(promoted);
  const Where running = where_each(plan);

  // On a copy: if replan evicts a running unit, the plan must not say it moved.
  packing::Plan replanned = plan;
  replanned.unplaced.clear();
  planner.replan(replanned, {}, ordered);
  Where after = where_each(replanned);
  out.replanned = std::all_of(running.begin(), running.end(), [&](const auto& entry) {
    auto it = after.find(entry.first);
    return it != after.end() && it->second == entry.second;
  });
  if (out.replanned) {
    plan = std::move(replanned);
  } else {
    plan.unplaced.clear();
    for (const auto& t : ordered) planner.place(plan, t);
    after = where_each(plan);
  }
  plan.unplaced.clear();

  std::set<std::int64_t> units;
  std::set<int> actors;
  for (const auto& t : ordered) {
    auto it = after.find(t.trial);
    if (it == after.end()) {
      out.waiting.push_back(t.trial);
      continue;
    }
    out.placed.push_back({t.trial, it->second.first});
    actors.insert(it->second.first);
    units.insert(it->second.second);
  }
  out.units = static_cast<int>(units.size());
  out.actors = static_cast<int>(actors.size());
  return out;
}

}  // namespace packtune
