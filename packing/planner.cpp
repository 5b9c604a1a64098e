#include "packing/planner.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <deque>
#include <limits>
#include <map>
#include <set>
#include <string_view>
#include <tuple>
#include <unordered_set>

#include "packtune/error.hpp"

namespace packtune::packing {
namespace {

std::string mib(std::int64_t bytes) {
  return std::to_string((bytes + (1 << 20) - 1) >> 20) + " MiB";
}

// Actors whose devices are of one kind price a unit alike (ThroughputModel looks up by kind;
// an empty device means any kind).
std::string device_kind(const std::string& device) { return device.empty() ? std::string() : "=" + device_class(device); }

std::uint64_t next_planner_id() {
  static std::atomic<std::uint64_t> next{1};
  return next.fetch_add(1, std::memory_order_relaxed);
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

MixedPacks parse_mixed_packs(const std::string& text) {
  if (text == "auto") return MixedPacks::Auto;
  if (text == "always") return MixedPacks::Always;
  if (text == "never") return MixedPacks::Never;
  throw InputError("mixed_packs: unknown value \"" + text + "\"; expected auto, always or never");
}

int units_per_actor(MixedPacks mode, const std::string& device) {
  constexpr int kUnlimited = 1 << 30;
  switch (mode) {
    case MixedPacks::Always: return kUnlimited;
    case MixedPacks::Never: return 1;
    case MixedPacks::Auto: break;
  }
  return device_class(device) == "cpu" ? 1 : kUnlimited;
}

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
  if (options_.fuse == FuseMode::Never) return 1;
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

void Planner::refresh(ActorPlan& actor) const {
  derive(actor);
  // The plan this actor belongs to is out of the planner's sight: every index rebuilds.
  PlanIndex::invalidate_all();
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

bool Planner::fits(const ActorPlan& actor, int unit, const std::vector<TrialDemand>& item,
                   const UnitEstimate* alone) const {
  const int k = static_cast<int>(item.size());
  if (actor.members() + k > actor.actor.max_members) return false;
  if (unit < 0 && static_cast<int>(actor.units.size()) >= actor.actor.max_units) return false;
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

// The segment tree and the closed actors behind first fit: the first opened actor in order
// with room for an item is found in O(log actors) instead of by trying each in turn.
class Planner::FirstFit {
 public:
  FirstFit(const Planner& planner, Plan& plan) : planner_(planner), plan_(plan), opened_(plan.actors.size(), false) {
    while (leaves_ < plan.actors.size()) leaves_ *= 2;
    room_.assign(2 * leaves_, Room{});
    for (std::size_t i = 0; i < plan.actors.size(); ++i) {
      const auto& spec = plan.actors[i].actor;
      closed_.insert({-planner_.usable(spec), i});
      min_base_ = std::min(min_base_, spec.base_bytes);
    }
  }

  // Where the item goes, as trying every opened actor in order, then the roomiest closed
  // one, would find it.
  std::optional<Candidate> find(const std::vector<TrialDemand>& item) const {
    const int k = static_cast<int>(item.size());
    const auto padded = padded_shape(item);
    const auto alone = planner_.model_.estimate(padded, k);
    std::size_t own = first(0, k, alone);
    while (own < plan_.actors.size() && !planner_.fits(plan_.actors[own], -1, item, &alone)) own = first(own + 1, k, alone);
    if (planner_.options_.fuse != FuseMode::Never) {
      // An actor in front of `own` that takes it only by joining a unit (a join comes first
      // on one actor too).
      for (auto i : plan_.index.fusable(fusion_key(padded), bound(padded))) {
        if (i > own) break;
        if (!opened_[i]) continue;
        const auto& a = plan_.actors[i];
        const int u = planner_.joinable(a, item);
        if (u >= 0 && planner_.fits(a, u, item)) return Candidate{i, u};
      }
    }
    if (own < plan_.actors.size()) return Candidate{own, -1};
    for (const auto& [negative_usable, i] : closed_) {
      // Ordered by room: past the first too small for the item even without a base, none fits.
      if (min_base_ >= 0 && -negative_usable < alone.peak()) break;
      if (planner_.fits(plan_.actors[i], -1, item, &alone)) return Candidate{i, -1};
    }
    return std::nullopt;
  }

  // The actor took an item: it is open now, with less room.
  void took(std::size_t i) {
    if (!opened_[i]) {
      opened_[i] = true;
      closed_.erase({-planner_.usable(plan_.actors[i].actor), i});
    }
    const auto& a = plan_.actors[i];
    Room r;
    // A new unit needs a member slot and a unit slot; joins are found through the index.
    r.slots = static_cast<int>(a.units.size()) >= a.actor.max_units
                  ? kNone
                  : static_cast<std::int64_t>(a.actor.max_members) - a.members();
    if (a.actor.capacity_bytes <= 0) {
      r.free = r.beside = kUnbounded;
    } else {
      r.free = planner_.usable(a.actor) - a.actor.base_bytes - a.persistent_bytes;
      r.beside = r.free - a.largest_transient;
    }
    std::size_t node = leaves_ + i;
    room_[node] = r;
    for (node /= 2; node >= 1; node /= 2) {
      const auto& l = room_[2 * node];
      const auto& h = room_[2 * node + 1];
      room_[node] = {std::max(l.slots, h.slots), std::max(l.free, h.free), std::max(l.beside, h.beside)};
    }
  }

 private:
  static constexpr std::int64_t kUnbounded = std::numeric_limits<std::int64_t>::max() / 4;
  static constexpr std::int64_t kNone = std::numeric_limits<std::int64_t>::min() / 4;
  // An opened actor's room, or the most of any below a node. It fits a new unit of
  // persistent p and transient t iff slots >= k, beside >= p and free >= p + t
  // (base + persistent + p + max(largest transient, t) <= usable, rearranged).
  struct Room {
    std::int64_t slots = kNone;
    std::int64_t free = kNone;   // usable - base - persistent
    std::int64_t beside = kNone;  // free - the largest transient
  };

  bool may_fit(const Room& r, int k, const UnitEstimate& e) const {
    return r.slots >= k && r.beside >= e.persistent && r.free >= e.peak();
  }

  // The first opened actor from `from` on that may fit, or the number of actors.
  std::size_t first(std::size_t from, int k, const UnitEstimate& e) const {
    const auto none = plan_.actors.size();
    const auto found = first(1, 0, leaves_, from, k, e);
    return found < none ? found : none;
  }
  std::size_t first(std::size_t node, std::size_t lo, std::size_t hi, std::size_t from, int k,
                    const UnitEstimate& e) const {
    if (hi <= from || !may_fit(room_[node], k, e)) return leaves_;
    if (hi - lo == 1) return lo;
    const auto mid = (lo + hi) / 2;
    const auto left = first(2 * node, lo, mid, from, k, e);
    return left < leaves_ ? left : first(2 * node + 1, mid, hi, from, k, e);
  }

  const Planner& planner_;
  Plan& plan_;
  std::vector<bool> opened_;
  std::size_t leaves_ = 1;
  std::vector<Room> room_;
  std::set<std::pair<std::int64_t, std::size_t>> closed_;  // -usable, slot: the roomiest first
  std::int64_t min_base_ = 0;
};

std::optional<Planner::Candidate> Planner::least_loaded(const Plan& plan, const TrialDemand& trial) const {
  // The old scan took, actor by actor (a join before a new unit on one actor), the first
  // offer whose finish undercut the best so far by more than kTie. Its answer depends only
  // on the offers below the first gap wider than kTie in the sorted finishes (an offer
  // above it never displaces one below, and the first below always displaces one above),
  // and of offers with equal finishes only the first in order can win. So: collect those
  // offers in order of finish from the indices (joins by a lower bound on their finish,
  // asked only while that bound is below the gap), then run the old scan over them.
  constexpr double kTie = 1e-12;
  const std::vector<TrialDemand> item{trial};
  struct Offer {
    double finish;
    std::size_t actor;
    int unit;  // -1: a unit of its own
  };
  auto offer = [&](std::size_t i) -> std::optional<Offer> {
    const auto& a = plan.actors[i];
    const int u = joinable(a, item);
    if (u < 0 || !fits(a, u, item)) return std::nullopt;
    const auto& unit = a.units[static_cast<std::size_t>(u)];
    PlannedUnit grown = unit;
    grown.members.push_back(trial);
    grown.shape = padded_shape(grown.members);
    const double added = unit_seconds(grown, a.actor.device) - unit_seconds(unit, a.actor.device);
    return Offer{a.estimated_seconds + added, i, u};
  };
  auto later = [](const Offer& x, const Offer& y) { return x.finish > y.finish; };
  std::vector<Offer> joins;  // a min-heap of the joins found so far
  std::unordered_set<std::size_t> asked;
  PlanIndex::Joins to_ask;
  if (options_.fuse != FuseMode::Never) to_ask = plan.index.joins(fusion_key(trial.shape), bound(trial.shape), trial.steps);

  // Per device kind, new units in order of the actor's load: what a new unit adds is the
  // same on every actor of a kind.
  const auto alone = model_.estimate(padded_shape(item), 1);
  struct Stream {
    const std::set<PlanIndex::Load>* loads;
    std::set<PlanIndex::Load>::const_iterator at;
    double added;
    std::optional<Offer> next;
  };
  auto advance = [&](Stream& s) {
    s.next.reset();
    while (s.at != s.loads->end() && !s.next) {
      const double seconds = s.at->first;
      const auto end = s.loads->upper_bound({seconds, std::numeric_limits<std::size_t>::max()});
      for (; s.at != end; ++s.at) {
        if (!fits(plan.actors[s.at->second], -1, item, &alone)) continue;
        s.next = Offer{seconds + s.added, s.at->second, -1};
        break;
      }
      s.at = end;  // the rest of an equal load finish alike and come later in order
    }
  };
  std::vector<Stream> streams;
  PlannedUnit own;
  own.members = item;
  own.shape = padded_shape(item);
  for (const auto& [kind, loads] : plan.index.open()) {
    if (loads.empty()) continue;
    const auto& device = plan.actors[loads.begin()->second].actor.device;
    streams.push_back({&loads, loads.begin(), unit_seconds(own, device), std::nullopt});
    advance(streams.back());
  }

  std::vector<Offer> low;
  while (true) {
    const Offer* next = joins.empty() ? nullptr : &joins.front();
    Stream* from = nullptr;
    for (auto& s : streams) {
      if (s.next && (!next || s.next->finish < next->finish)) {
        next = &*s.next;
        from = &s;
      }
    }
    const double unasked = to_ask.done() ? std::numeric_limits<double>::infinity() : to_ask.bound();
    if (next && next->finish <= unasked) {
      // No offer still unasked finishes earlier.
      if (!low.empty() && low.back().finish < next->finish - kTie) break;
      low.push_back(*next);
      if (from) {
        advance(*from);
      } else {
        std::pop_heap(joins.begin(), joins.end(), later);
        joins.pop_back();
      }
      continue;
    }
    if (to_ask.done() || (!low.empty() && low.back().finish < unasked - kTie)) break;
    const auto i = to_ask.slot();
    to_ask.next();
    if (!asked.insert(i).second) continue;
    if (auto o = offer(i)) {
      joins.push_back(*o);
      std::push_heap(joins.begin(), joins.end(), later);
    }
  }
  std::sort(low.begin(), low.end(), [](const Offer& x, const Offer& y) {
    return x.actor < y.actor || (x.actor == y.actor && x.unit > y.unit);
  });
  std::optional<Candidate> best;
  double best_finish = 0;
  for (const auto& o : low) {
    if (!best || o.finish < best_finish - kTie) {
      best = Candidate{o.actor, o.unit};
      best_finish = o.finish;
    }
  }
  return best;
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
