// The pre-index planner (commit fcf400e, packing/planner.cpp), its searches verbatim.
#include "reference_planner.hpp"

#include <algorithm>
#include <cmath>
#include <deque>
#include <limits>
#include <map>
#include <set>

namespace packtune::packing {

const PlannedUnit* ReferencePlanner::unit_of(const Plan& plan, std::int64_t trial) {
  for (const auto& a : plan.actors) {
    for (const auto& u : a.units) {
      for (const auto& m : u.members) {
        if (m.trial == trial) return &u;
      }
    }
  }
  return nullptr;
}

void ReferencePlanner::add(Plan& plan, std::size_t actor_index, int unit, std::vector<TrialDemand> item) const {
  auto& actor = plan.actors[actor_index];
  if (unit >= 0) {
    auto& members = actor.units[static_cast<std::size_t>(unit)].members;
    members.insert(members.end(), item.begin(), item.end());
  } else {
    PlannedUnit u;
    u.id = plan.next_unit_id++;
    u.key = p_.fusion_key(item.front().shape);
    // A unit nothing will join trains as a plain model: fusing one member only costs.
    u.solo = item.size() == 1 && (actor.actor.max_members <= 1 ||
                                  p_.useful_members(item.front().shape, actor.actor.device) <= 1);
    u.members = std::move(item);
    actor.units.push_back(std::move(u));
  }
  p_.derive(actor);
}

std::optional<ReferencePlanner::Candidate> ReferencePlanner::find_room(const Plan& plan, const std::vector<TrialDemand>& item,
                                                     Policy policy, const std::vector<bool>* opened) const {
  const int k = static_cast<int>(item.size());
  const auto alone = p_.memory_model().estimate(p_.padded_shape(item), k);
  if (policy == Policy::FirstFit) {
    for (std::size_t i = 0; i < plan.actors.size(); ++i) {
      if (opened && !(*opened)[i]) continue;
      const auto& a = plan.actors[i];
      const int u = p_.joinable(a, item);
      if (u >= 0 && p_.fits(a, u, item)) return Candidate{i, u};
      if (p_.fits(a, -1, item, &alone)) return Candidate{i, -1};
    }
    if (!opened) return std::nullopt;
    // Open the roomiest closed actor that takes it.
    std::optional<Candidate> best;
    for (std::size_t i = 0; i < plan.actors.size(); ++i) {
      if ((*opened)[i] || !p_.fits(plan.actors[i], -1, item, &alone)) continue;
      if (!best || p_.usable(plan.actors[i].actor) > p_.usable(plan.actors[best->actor].actor)) best = Candidate{i, -1};
    }
    return best;
  }

  // LeastLoaded: the earliest estimated finish, counting what the trial adds there.
  std::optional<Candidate> best;
  double best_finish = 0;
  for (std::size_t i = 0; i < plan.actors.size(); ++i) {
    const auto& a = plan.actors[i];
    const int u = p_.joinable(a, item);
    std::vector<int> options{-1};
    if (u >= 0) options.insert(options.begin(), u);
    for (int option : options) {
      if (!p_.fits(a, option, item)) continue;
      double added;
      if (option >= 0) {
        PlannedUnit grown = a.units[static_cast<std::size_t>(option)];
        grown.members.insert(grown.members.end(), item.begin(), item.end());
        grown.shape = p_.padded_shape(grown.members);
        added = p_.unit_seconds(grown, a.actor.device) -
                p_.unit_seconds(a.units[static_cast<std::size_t>(option)], a.actor.device);
      } else {
        PlannedUnit own;
        own.members = item;
        own.shape = p_.padded_shape(item);
        added = p_.unit_seconds(own, a.actor.device);
      }
      const double finish = a.estimated_seconds + added;
      if (!best || finish < best_finish - 1e-12) {
        best = Candidate{i, option};
        best_finish = finish;
      }
    }
  }
  return best;
}

Plan ReferencePlanner::plan(const std::vector<ActorSpec>& actors, const std::vector<TrialDemand>& trials) const {
  Plan plan;
  for (const auto& spec : actors) {
    ActorPlan a;
    a.actor = spec;
    p_.derive(a);
    plan.actors.push_back(std::move(a));
  }
  int max_members = 1;
  for (const auto& spec : actors) max_members = std::max(max_members, spec.max_members);

  // Fusable groups, in order of first appearance, cut into units worth fusing.
  std::vector<std::vector<TrialDemand>> items;
  std::map<std::string, std::size_t> group_of;
  std::vector<std::vector<TrialDemand>> groups;
  for (const auto& t : trials) {
    if (p_.options().fuse == FuseMode::Never) {
      groups.push_back({t});
      continue;
    }
    auto [it, fresh] = group_of.try_emplace(p_.fusion_key(t.shape), groups.size());
    if (fresh) groups.emplace_back();
    groups[it->second].push_back(t);
  }
  const std::string device = actors.empty() ? std::string() : actors.front().device;
  for (auto& group : groups) {
    // Neighbours in width pad least: widest first.
    std::stable_sort(group.begin(), group.end(), [](const TrialDemand& a, const TrialDemand& b) {
      return a.shape.flops_per_sample > b.shape.flops_per_sample;
    });
    const auto size = static_cast<std::size_t>(std::min(p_.useful_members(group.front().shape, device), max_members));
    for (std::size_t begin = 0; begin < group.size(); begin += size) {
      const auto end = std::min(group.size(), begin + size);
      items.emplace_back(group.begin() + static_cast<std::ptrdiff_t>(begin), group.begin() + static_cast<std::ptrdiff_t>(end));
    }
  }
  // First-fit decreasing by estimated memory.
  std::vector<std::int64_t> bytes;
  for (const auto& item : items) bytes.push_back(p_.memory_model().estimate(p_.padded_shape(item), static_cast<int>(item.size())).peak());
  std::vector<std::size_t> order(items.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return bytes[a] > bytes[b]; });

  std::deque<std::vector<TrialDemand>> queue;
  for (auto i : order) queue.push_back(std::move(items[i]));
  std::vector<bool> opened(plan.actors.size(), false);
  while (!queue.empty()) {
    auto item = std::move(queue.front());
    queue.pop_front();
    if (auto c = find_room(plan, item, Policy::FirstFit, &opened)) {
      opened[c->actor] = true;
      add(plan, c->actor, c->unit, std::move(item));
    } else if (item.size() > 1) {
      // Too big as one unit anywhere: two halves, tried next.
      std::vector<TrialDemand> second(item.begin() + static_cast<std::ptrdiff_t>(item.size() / 2), item.end());
      item.resize(item.size() / 2);
      queue.push_front(std::move(second));
      queue.push_front(std::move(item));
    } else {
      plan.unplaced.push_back(p_.why_unplaced(plan, item.front()));
    }
  }
  if (p_.options().balance) balance(plan);
  return plan;
}

void ReferencePlanner::balance(Plan& plan) const {
  // FLEET's greedy balance: move part of the busiest actor's work to the least busy one
  // that has room, as long as that lowers the busiest actor's estimated time.
  for (std::size_t round = 0; round < plan.actors.size() * 8; ++round) {
    std::size_t busiest = plan.actors.size();
    for (std::size_t i = 0; i < plan.actors.size(); ++i) {
      if (plan.actors[i].members() < 2) continue;
      if (busiest == plan.actors.size() || plan.actors[i].estimated_seconds > plan.actors[busiest].estimated_seconds) busiest = i;
    }
    if (busiest == plan.actors.size()) return;
    auto& from = plan.actors[busiest];
    // The part to move: the unit closest to half the busiest actor's work, or half of its
    // only unit.
    std::vector<TrialDemand> part;
    int unit = -1;
    if (from.units.size() > 1) {
      double best = std::numeric_limits<double>::max();
      for (std::size_t u = 0; u < from.units.size(); ++u) {
        const double d = std::abs(p_.unit_seconds(from.units[u], from.actor.device) - from.estimated_seconds / 2);
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
    for (std::size_t i = 0; i < plan.actors.size(); ++i) {
      if (i == busiest || !p_.fits(plan.actors[i], -1, part)) continue;
      if (!target || plan.actors[i].estimated_seconds < plan.actors[*target].estimated_seconds) target = i;
    }
    if (!target) return;
    ActorPlan trial_from = from;
    if (unit >= 0) {
      trial_from.units.erase(trial_from.units.begin() + unit);
    } else {
      trial_from.units.front().members.resize(trial_from.units.front().members.size() - part.size());
    }
    p_.derive(trial_from);
    PlannedUnit moved;
    moved.members = part;
    moved.shape = p_.padded_shape(part);
    const double target_after =
        plan.actors[*target].estimated_seconds + p_.unit_seconds(moved, plan.actors[*target].actor.device);
    if (std::max(trial_from.estimated_seconds, target_after) >= from.estimated_seconds - 1e-12) return;
    from = std::move(trial_from);
    add(plan, *target, -1, std::move(part));
  }
}

std::optional<int> ReferencePlanner::place(Plan& plan, const TrialDemand& trial, Unplaced* why) const {
  auto c = find_room(plan, {trial}, Policy::LeastLoaded, nullptr);
  if (!c) {
    if (why) *why = p_.why_unplaced(plan, trial);
    return std::nullopt;
  }
  add(plan, c->actor, c->unit, {trial});
  return plan.actors[c->actor].actor.id;
}

bool ReferencePlanner::remove(Plan& plan, std::int64_t trial) const {
  for (auto& a : plan.actors) {
    for (auto u = a.units.begin(); u != a.units.end(); ++u) {
      auto m = std::find_if(u->members.begin(), u->members.end(), [&](const TrialDemand& d) { return d.trial == trial; });
      if (m == u->members.end()) continue;
      u->members.erase(m);
      if (u->members.empty()) a.units.erase(u);
      p_.derive(a);
      return true;
    }
  }
  return false;
}

int ReferencePlanner::remove(Plan& plan, const std::vector<std::int64_t>& trials) const {
  const std::set<std::int64_t> gone(trials.begin(), trials.end());
  int found = 0;
  auto leaves = [&](const TrialDemand& d) { return gone.count(d.trial) > 0; };
  for (auto& a : plan.actors) {
    bool changed = false;
    for (auto& u : a.units) {
      const auto before = u.members.size();
      u.members.erase(std::remove_if(u.members.begin(), u.members.end(), leaves), u.members.end());
      found += static_cast<int>(before - u.members.size());
      changed = changed || before != u.members.size();
    }
    if (!changed) continue;
    a.units.erase(std::remove_if(a.units.begin(), a.units.end(), [](const PlannedUnit& u) { return u.members.empty(); }),
                  a.units.end());
    p_.derive(a);
  }
  const auto before = plan.unplaced.size();
  plan.unplaced.erase(std::remove_if(plan.unplaced.begin(), plan.unplaced.end(),
                                     [&](const Unplaced& u) { return leaves(u.demand); }),
                      plan.unplaced.end());
  return found + static_cast<int>(before - plan.unplaced.size());
}

int ReferencePlanner::replan(Plan& plan, const std::vector<std::int64_t>& leaving,
                    const std::vector<TrialDemand>& arriving) const {
  remove(plan, leaving);
  // Corrected figures may put an actor over its capacity: evict its largest units.
  std::vector<TrialDemand> evicted;
  for (auto& a : plan.actors) {
    p_.derive(a);
    while (!a.units.empty() && a.actor.capacity_bytes > 0 && a.estimated_bytes > p_.usable(a.actor)) {
      auto largest = std::max_element(a.units.begin(), a.units.end(), [](const PlannedUnit& x, const PlannedUnit& y) {
        return x.estimate.peak() < y.estimate.peak();
      });
      evicted.insert(evicted.end(), largest->members.begin(), largest->members.end());
      a.units.erase(largest);
      p_.derive(a);
    }
  }
  std::vector<TrialDemand> waiting;
  for (const auto& u : plan.unplaced) waiting.push_back(u.demand);
  plan.unplaced.clear();
  int moved = 0;
  auto try_place = [&](const TrialDemand& t, bool counts_as_move) {
    Unplaced why;
    if (place(plan, t, &why)) {
      moved += counts_as_move;
    } else {
      plan.unplaced.push_back(std::move(why));
    }
  };
  for (const auto& t : evicted) try_place(t, true);
  for (const auto& t : waiting) try_place(t, false);
  for (const auto& t : arriving) try_place(t, false);
  return moved;
}

}  // namespace packtune::packing
