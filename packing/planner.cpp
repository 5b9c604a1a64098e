#include "packing/planner.hpp"

#include <algorithm>
#include <deque>
#include <limits>
#include <map>
#include <set>

#include "packtune/error.hpp"

namespace packtune::packing {
namespace {

std::string mib(std::int64_t bytes) {
  return std::to_string((bytes + (1 << 20) - 1) >> 20) + " MiB";
}

double total_steps(const std::vector<TrialDemand>& members) {
  double s = 0;
  for (const auto& m : members) s += m.steps;
  return s;
}

}  // namespace

FuseMode parse_fuse_mode(const std::string& text) {
  if (text == "never") return FuseMode::Never;
  if (text == "auto") return FuseMode::Auto;
  if (text == "always") return FuseMode::Always;
  throw InputError("fuse: unknown value \"" + text + "\"; expected auto, always or never");
}

int Plan::actors_used() const {
  int n = 0;
  for (const auto& a : actors) n += !a.units.empty();
  return n;
}

Planner::Planner(MemoryModel model, PlanOptions options)
    : model_(std::move(model)),
      options_(options),
      throughput_(options.step_overhead_seconds, options.device_flops) {}

void Planner::record_profile(const std::string& device, const TrialShape& shape, StepProfile profile) {
  throughput_.record(device, shape, std::move(profile));
  useful_cache_.clear();
}

const std::string& Planner::fusion_key(const TrialShape& shape) {
  return shape.fusion.empty() ? shape.key : shape.fusion;
}

TrialShape Planner::padded_shape(const std::vector<TrialDemand>& members) {
  const TrialShape* widest = &members.front().shape;
  for (const auto& m : members) {
    if (m.shape.parameters > widest->parameters) widest = &m.shape;
  }
  TrialShape s = *widest;
  for (const auto& m : members) {
    s.largest_parameter = std::max(s.largest_parameter, m.shape.largest_parameter);
    s.activations_per_sample = std::max(s.activations_per_sample, m.shape.activations_per_sample);
    s.flops_per_sample = std::max(s.flops_per_sample, m.shape.flops_per_sample);
    s.optimizer_slots = std::max(s.optimizer_slots, m.shape.optimizer_slots);
    s.weight_decay = s.weight_decay || m.shape.weight_decay;
    s.adaptive = s.adaptive || m.shape.adaptive;
  }
  return s;
}

const PlannedUnit* Planner::unit_of(const Plan& plan, std::int64_t trial) {
  for (const auto& a : plan.actors) {
    for (const auto& u : a.units) {
      for (const auto& m : u.members) {
        if (m.trial == trial) return &u;
      }
    }
  }
  return nullptr;
}

double Planner::step_seconds(const TrialShape& shape, int members, const std::string& device) const {
  return throughput_.step_seconds(device, shape, members);
}

int Planner::useful_members(const TrialShape& shape, const std::string& device) const {
  if (options_.fuse == FuseMode::Never) return 1;
  if (options_.fuse == FuseMode::Always) return 4096;
  const auto cache_key = device_class(device) + "|" + shape.key + "|" + std::to_string(shape.flops_per_sample);
  if (auto hit = useful_cache_.find(cache_key); hit != useful_cache_.end()) return hit->second;
  int k = 1;
  // Throughput k / t(k) rises with k while the fixed cost per step still dominates.
  while (k < 4096) {
    const double now = k / step_seconds(shape, k, device);
    const double next = (k + 1) / step_seconds(shape, k + 1, device);
    if (next < now * (1 + options_.min_gain)) break;
    ++k;
  }
  useful_cache_[cache_key] = k;
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

void Planner::refresh(ActorPlan& actor) const {
  actor.persistent_bytes = 0;
  actor.largest_transient = 0;
  actor.estimated_seconds = 0;
  actor.member_count = 0;
  for (auto& unit : actor.units) {
    actor.member_count += static_cast<int>(unit.members.size());
    unit.shape = padded_shape(unit.members);
    unit.estimate = model_.estimate(unit.shape, static_cast<int>(unit.members.size()));
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

void Planner::add(Plan& plan, std::size_t actor_index, int unit, std::vector<TrialDemand> item) const {
  auto& actor = plan.actors[actor_index];
  if (unit >= 0) {
    auto& members = actor.units[static_cast<std::size_t>(unit)].members;
    members.insert(members.end(), item.begin(), item.end());
  } else {
    PlannedUnit u;
    u.id = plan.next_unit_id++;
    u.key = fusion_key(item.front().shape);
    // A unit nothing will join trains as a plain model: fusing one member only costs.
    u.solo = item.size() == 1 && (actor.actor.max_members <= 1 ||
                                  useful_members(item.front().shape, actor.actor.device) <= 1);
    u.members = std::move(item);
    actor.units.push_back(std::move(u));
  }
  refresh(actor);
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

std::optional<Planner::Candidate> Planner::find_room(const Plan& plan, const std::vector<TrialDemand>& item,
                                                     Policy policy, const std::vector<bool>* opened) const {
  const int k = static_cast<int>(item.size());
  const auto alone = model_.estimate(padded_shape(item), k);
  if (policy == Policy::FirstFit) {
    for (std::size_t i = 0; i < plan.actors.size(); ++i) {
      if (opened && !(*opened)[i]) continue;
      const auto& a = plan.actors[i];
      const int u = joinable(a, item);
      if (u >= 0 && fits(a, u, item)) return Candidate{i, u};
      if (fits(a, -1, item, &alone)) return Candidate{i, -1};
    }
    if (!opened) return std::nullopt;
    // Open the roomiest closed actor that takes it.
    std::optional<Candidate> best;
    for (std::size_t i = 0; i < plan.actors.size(); ++i) {
      if ((*opened)[i] || !fits(plan.actors[i], -1, item, &alone)) continue;
      if (!best || usable(plan.actors[i].actor) > usable(plan.actors[best->actor].actor)) best = Candidate{i, -1};
    }
    return best;
  }

  // LeastLoaded: the earliest estimated finish, counting what the trial adds there.
  // The driver places every job this way, over every actor: what does not depend on the
  // actor is computed once, and a full actor costs a comparison.
  std::optional<Candidate> best;
  double best_finish = 0;
  PlannedUnit own;
  own.members = item;
  own.shape = padded_shape(item);
  const std::string* own_device = nullptr;  // the device own_seconds is for
  double own_seconds = 0;
  for (std::size_t i = 0; i < plan.actors.size(); ++i) {
    const auto& a = plan.actors[i];
    if (a.members() + k > a.actor.max_members) continue;
    const int u = joinable(a, item);
    // Joining unit u first, if any, then a unit of its own.
    for (int pass = u >= 0 ? 0 : 1; pass < 2; ++pass) {
      const int option = pass == 0 ? u : -1;
      if (!fits(a, option, item, option < 0 ? &alone : nullptr)) continue;
      double added;
      if (option >= 0) {
        PlannedUnit grown = a.units[static_cast<std::size_t>(option)];
        grown.members.insert(grown.members.end(), item.begin(), item.end());
        grown.shape = padded_shape(grown.members);
        added = unit_seconds(grown, a.actor.device) -
                unit_seconds(a.units[static_cast<std::size_t>(option)], a.actor.device);
      } else {
        if (!own_device || *own_device != a.actor.device) {
          own_seconds = unit_seconds(own, a.actor.device);
          own_device = &a.actor.device;
        }
        added = own_seconds;
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

Unplaced Planner::why_unplaced(const Plan& plan, const TrialDemand& trial) const {
  const auto need = model_.solo_bytes(trial.shape);
  std::int64_t largest = 0;
  bool any_member_slot = false;
  for (const auto& a : plan.actors) {
    if (a.actor.max_members < 1) continue;
    any_member_slot = true;
    largest = std::max(largest, usable(a.actor) - a.actor.base_bytes);
  }
  if (plan.actors.empty() || !any_member_slot) return {trial, "no actor to run it on", false};
  if (need > largest) {
    return {trial, "needs about " + mib(need) + ", more than any actor has (the largest has " +
                       mib(std::max<std::int64_t>(0, largest)) + " for trials)", false};
  }
  return {trial, "waits for room: every actor that could hold it is full", true};
}

Plan Planner::plan(const std::vector<ActorSpec>& actors, const std::vector<TrialDemand>& trials) const {
  Plan plan;
  for (const auto& spec : actors) {
    ActorPlan a;
    a.actor = spec;
    refresh(a);
    plan.actors.push_back(std::move(a));
  }
  int max_members = 1;
  for (const auto& spec : actors) max_members = std::max(max_members, spec.max_members);

  // Fusable groups, in order of first appearance, cut into units worth fusing.
  std::vector<std::vector<TrialDemand>> items;
  std::map<std::string, std::size_t> group_of;
  std::vector<std::vector<TrialDemand>> groups;
  for (const auto& t : trials) {
    if (options_.fuse == FuseMode::Never) {
      groups.push_back({t});
      continue;
    }
    auto [it, fresh] = group_of.try_emplace(fusion_key(t.shape), groups.size());
    if (fresh) groups.emplace_back();
    groups[it->second].push_back(t);
  }
  const std::string device = actors.empty() ? std::string() : actors.front().device;
  for (auto& group : groups) {
    // Neighbours in width pad least: widest first.
    std::stable_sort(group.begin(), group.end(), [](const TrialDemand& a, const TrialDemand& b) {
      return a.shape.flops_per_sample > b.shape.flops_per_sample;
    });
    const auto size = static_cast<std::size_t>(std::min(useful_members(group.front().shape, device), max_members));
    for (std::size_t begin = 0; begin < group.size(); begin += size) {
      const auto end = std::min(group.size(), begin + size);
      items.emplace_back(group.begin() + static_cast<std::ptrdiff_t>(begin), group.begin() + static_cast<std::ptrdiff_t>(end));
    }
  }
  // First-fit decreasing by estimated memory.
  std::vector<std::int64_t> bytes;
  for (const auto& item : items) bytes.push_back(model_.estimate(padded_shape(item), static_cast<int>(item.size())).peak());
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
      plan.unplaced.push_back(why_unplaced(plan, item.front()));
    }
  }
  if (options_.balance) balance(plan);
  return plan;
}

void Planner::balance(Plan& plan) const {
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
        const double d = std::abs(unit_seconds(from.units[u], from.actor.device) - from.estimated_seconds / 2);
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
      if (i == busiest || !fits(plan.actors[i], -1, part)) continue;
      if (!target || plan.actors[i].estimated_seconds < plan.actors[*target].estimated_seconds) target = i;
    }
    if (!target) return;
    ActorPlan trial_from = from;
    if (unit >= 0) {
      trial_from.units.erase(trial_from.units.begin() + unit);
    } else {
      trial_from.units.front().members.resize(trial_from.units.front().members.size() - part.size());
    }
    refresh(trial_from);
    PlannedUnit moved;
    moved.members = part;
    moved.shape = padded_shape(part);
    const double target_after =
        plan.actors[*target].estimated_seconds + unit_seconds(moved, plan.actors[*target].actor.device);
    if (std::max(trial_from.estimated_seconds, target_after) >= from.estimated_seconds - 1e-12) return;
    from = std::move(trial_from);
    add(plan, *target, -1, std::move(part));
  }
}

std::optional<int> Planner::place(Plan& plan, const TrialDemand& trial, Unplaced* why) const {
  auto c = find_room(plan, {trial}, Policy::LeastLoaded, nullptr);
  if (!c) {
    if (why) *why = why_unplaced(plan, trial);
    return std::nullopt;
  }
  add(plan, c->actor, c->unit, {trial});
  return plan.actors[c->actor].actor.id;
}

bool Planner::remove(Plan& plan, std::int64_t trial) const {
  for (auto& a : plan.actors) {
    for (auto u = a.units.begin(); u != a.units.end(); ++u) {
      auto m = std::find_if(u->members.begin(), u->members.end(), [&](const TrialDemand& d) { return d.trial == trial; });
      if (m == u->members.end()) continue;
      u->members.erase(m);
      if (u->members.empty()) a.units.erase(u);
      refresh(a);
      return true;
    }
  }
  return false;
}

int Planner::remove(Plan& plan, const std::vector<std::int64_t>& trials) const {
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
    refresh(a);
  }
  const auto before = plan.unplaced.size();
  plan.unplaced.erase(std::remove_if(plan.unplaced.begin(), plan.unplaced.end(),
                                     [&](const Unplaced& u) { return leaves(u.demand); }),
                      plan.unplaced.end());
  return found + static_cast<int>(before - plan.unplaced.size());
}

int Planner::replan(Plan& plan, const std::vector<std::int64_t>& leaving,
                    const std::vector<TrialDemand>& arriving) const {
  remove(plan, leaving);
  // Corrected figures may put an actor over its capacity: evict its largest units.
  std::vector<TrialDemand> evicted;
  for (auto& a : plan.actors) {
    refresh(a);
    while (!a.units.empty() && a.actor.capacity_bytes > 0 && a.estimated_bytes > usable(a.actor)) {
      auto largest = std::max_element(a.units.begin(), a.units.end(), [](const PlannedUnit& x, const PlannedUnit& y) {
        return x.estimate.peak() < y.estimate.peak();
      });
      evicted.insert(evicted.end(), largest->members.begin(), largest->members.end());
      a.units.erase(largest);
      refresh(a);
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
