// Online placement's search (Planner::place): the actor where one trial finishes earliest,
// joining a unit or as a unit of its own, as a scan of every actor in order would find it,
// from the plan's index instead of the scan.
#include <algorithm>
#include <limits>
#include <optional>
#include <set>
#include <unordered_set>

#include "packing/planner.hpp"

namespace packtune::packing {

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

}  // namespace packtune::packing
