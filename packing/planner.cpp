// The planner's front: planning from scratch, online placement, removal and re-planning,
// composed from first fit (first_fit.hpp), least-loaded placement (least_loaded.cpp),
// balance (balance.cpp), the unit estimates (unit_estimates.cpp) and the index filing
// (plan_filing.cpp).
#include "packing/planner.hpp"

#include <algorithm>
#include <atomic>
#include <deque>
#include <map>
#include <set>
#include <unordered_set>

#include "packing/first_fit.hpp"

namespace packtune::packing {
namespace {

std::string mib(std::int64_t bytes) {
  return std::to_string((bytes + (1 << 20) - 1) >> 20) + " MiB";
}

std::uint64_t next_planner_id() {
  static std::atomic<std::uint64_t> next{1};
  return next.fetch_add(1, std::memory_order_relaxed);
}

}  // namespace

int Plan::actors_used() const {
  int n = 0;
  for (const auto& a : actors) n += !a.units.empty();
  return n;
}

Planner::Planner(MemoryModel model, PlanOptions options)
    : model_(std::move(model)),
      options_(options),
      throughput_(options.step_overhead_seconds, options.device_flops, options.cpu_step_overhead_seconds),
      id_(next_planner_id()) {}

void Planner::record_profile(const std::string& device, const TrialShape& shape, StepProfile profile) {
  throughput_.record(device, shape, std::move(profile));
  useful_cache_.clear();
  // Which units are at their useful size may have changed.
  PlanIndex::invalidate_all();
}

const PlannedUnit* Planner::unit_of(const Plan& plan, std::int64_t trial) {
  auto holds = [&](const PlannedUnit& u) {
    return std::any_of(u.members.begin(), u.members.end(), [&](const TrialDemand& m) { return m.trial == trial; });
  };
  if (plan.index.tracks(plan.actors.size())) {
    const auto* slot = plan.index.slot_of(trial);
    if (!slot) return nullptr;
    for (const auto& u : plan.actors[*slot].units) {
      if (holds(u)) return &u;
    }
    return nullptr;
  }
  // Changed outside the planner since it was indexed: look everywhere.
  for (const auto& a : plan.actors) {
    for (const auto& u : a.units) {
      if (holds(u)) return &u;
    }
  }
  return nullptr;
}

void Planner::refresh(ActorPlan& actor) const {
  derive(actor);
  // The plan this actor belongs to is out of the planner's sight: every index rebuilds.
  PlanIndex::invalidate_all();
}

void Planner::add(Plan& plan, std::size_t actor_index, int unit, std::vector<TrialDemand> item, Mode mode) const {
  auto& actor = plan.actors[actor_index];
  int changed = unit;
  for (const auto& m : item) plan.index.place(m.trial, actor_index);
  if (unit >= 0) {
    auto& changing = actor.units[static_cast<std::size_t>(unit)];
    changing.members.insert(changing.members.end(), item.begin(), item.end());

  } else {
    PlannedUnit u;
    u.id = plan.next_unit_id++;
    u.key = fusion_key(item.front().shape);
    // A unit nothing will join trains as a plain model: fusing one member only costs.
    u.solo = item.size() == 1 && (actor.actor.max_members <= 1 ||
                                  useful_members(item.front().shape, actor.actor.device) <= 1);
    u.members = std::move(item);
    actor.units.push_back(std::move(u));
    changed = static_cast<int>(actor.units.size()) - 1;
  }
  // Online, the model may have changed since the actor's other units were estimated.
  derive(actor, mode == Mode::Online ? kEveryUnit : changed);
  if (mode != Mode::Unfiled) plan.index.file(actor_index, filing(actor, plan.index.filed(actor_index)));
}

Unplaced Planner::why_unplaced(const Plan& plan, const TrialDemand& trial) const {
  const auto need = model_.solo_bytes(trial.shape);
  bool any_member_slot = false;
  std::int64_t largest = 0;
  if (plan.index.tracks(plan.actors.size()) && plan.index.planner == id_) {
    any_member_slot = plan.index.any_member_slot;
    largest = plan.index.largest_room;
  } else {
    for (const auto& a : plan.actors) {
      if (a.actor.max_members < 1) continue;
      any_member_slot = true;
      largest = std::max(largest, usable(a.actor) - a.actor.base_bytes);
    }
  }
  if (plan.actors.empty() || !any_member_slot) return {trial, "no actor to run it on", false};
  if (need > largest) {
    return {trial, "needs about " + mib(need) + ", more than any actor has (the largest has " +
                       mib(std::max<std::int64_t>(0, largest)) + " for trials)", false};
  }
  if (model_.unmeasured(trial.shape)) {
    return {trial, "waits for an actor of its own: its shape's memory is unmeasured, so it trains alone until an "
                   "actor measured it", true};
  }
  return {trial, "waits for room: every actor that could hold it is full", true};
}

Plan Planner::plan(const std::vector<ActorSpec>& actors, const std::vector<TrialDemand>& trials) const {
  Plan plan;
  for (const auto& spec : actors) {
    ActorPlan a;
    a.actor = spec;
    derive(a);
    plan.actors.push_back(std::move(a));
  }
  index(plan);
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
  FirstFit first_fit(*this, plan);
  while (!queue.empty()) {
    auto item = std::move(queue.front());
    queue.pop_front();
    if (auto c = first_fit.find(item)) {
      add(plan, c->actor, c->unit, std::move(item), Mode::Planning);
      first_fit.took(c->actor);
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
  if (options_.balance) {
    balance(plan);
    // Balance files nothing as it goes (it moves work many times over): file it all once.
    plan.index.reset(0);
    index(plan);
  }
  return plan;
}

std::optional<int> Planner::place(Plan& plan, const TrialDemand& trial, Unplaced* why) const {
  index(plan);
  auto c = least_loaded(plan, trial);
  if (!c) {
    if (why) *why = why_unplaced(plan, trial);
    return std::nullopt;
  }
  add(plan, c->actor, c->unit, {trial}, Mode::Online);
  return plan.actors[c->actor].actor.id;
}

bool Planner::remove(Plan& plan, std::int64_t trial) const {
  index(plan);
  const auto* slot = plan.index.slot_of(trial);
  if (!slot) return false;
  const auto i = *slot;
  auto& a = plan.actors[i];
  for (auto u = a.units.begin(); u != a.units.end(); ++u) {
    auto m = std::find_if(u->members.begin(), u->members.end(), [&](const TrialDemand& d) { return d.trial == trial; });
    if (m == u->members.end()) continue;
    u->members.erase(m);
    if (u->members.empty()) a.units.erase(u);
    plan.index.forget(trial);
    refit(plan, i);
    return true;
  }
  return false;
}

int Planner::remove(Plan& plan, const std::vector<std::int64_t>& trials) const {
  index(plan);
  // Asked once per member of every holding actor: hashed, not ordered.
  const std::unordered_set<std::int64_t> gone(trials.begin(), trials.end());
  std::set<std::size_t> holding;
  for (auto t : gone) {
    if (const auto* slot = plan.index.slot_of(t)) holding.insert(*slot);
  }
  int found = 0;
  auto leaves = [&](const TrialDemand& d) { return gone.count(d.trial) > 0; };
  for (auto i : holding) {
    auto& a = plan.actors[i];
    for (auto& u : a.units) {
      for (const auto& m : u.members) {
        if (leaves(m)) plan.index.forget(m.trial);
      }
      const auto before = u.members.size();
      u.members.erase(std::remove_if(u.members.begin(), u.members.end(), leaves), u.members.end());
      found += static_cast<int>(before - u.members.size());
    }
    a.units.erase(std::remove_if(a.units.begin(), a.units.end(), [](const PlannedUnit& u) { return u.members.empty(); }),
                  a.units.end());
    refit(plan, i);
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
  for (std::size_t i = 0; i < plan.actors.size(); ++i) {
    auto& a = plan.actors[i];
    derive(a);
    while (!a.units.empty() && a.actor.capacity_bytes > 0 && a.estimated_bytes > usable(a.actor)) {
      auto largest = std::max_element(a.units.begin(), a.units.end(), [](const PlannedUnit& x, const PlannedUnit& y) {
        return x.estimate.peak() < y.estimate.peak();
      });
      for (const auto& m : largest->members) plan.index.forget(m.trial);
      evicted.insert(evicted.end(), largest->members.begin(), largest->members.end());
      a.units.erase(largest);
      derive(a);
    }
    // A memory correction changes no unit's shape or step times: what was filed still holds.
    plan.index.file(i, filing(a, plan.index.filed(i)));
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

