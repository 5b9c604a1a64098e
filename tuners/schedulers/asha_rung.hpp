#pragma once
// One rung of ASHA: the results completed at its budget, and which of them may still go on.
//
// A trial is promotable when it is among the best floor(n/eta) of the n results in the rung
// and has not been promoted from it yet; `eager`: the best max(1, floor(n/eta)), so that while
// fewer than eta results are in, the best so far goes on (Optuna's SuccessiveHalvingPruner,
// and in effect Ray Tune's ASHA, which stops a trial only below the rung's 1/eta quantile).
// The rung keeps its results split into the best floor(n/eta) (`top_`) and the rest, and the
// promotable ones apart, so adding a result and finding the best promotable trial cost
// O(log n) instead of a sort of the rung per request: 100,000 trials would otherwise take
// minutes to simulate. The rest, most of a rung, is only ever asked for its best: a heap in
// one vector, where a tree's node per result cost the driver a cache miss per level (a
// twentieth of its time at 10,000 actors, docs/benchmarks.md).
#include <cstdint>
#include <optional>
#include <set>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "tuners/tuner.hpp"

namespace packtune::tuners {

class AshaRung {
 public:
  struct Entry {
    double metric;
    TrialId trial;
  };

  AshaRung(Mode mode, std::int64_t eta, bool eager = false);

  void add(TrialId trial, double metric);
  // The best promotable trial (ties: lower id), if any. A failed (NaN) result never is.
  std::optional<Entry> best_promotable() const;
  void mark_promoted(TrialId trial);

  std::int64_t size() const { return static_cast<std::int64_t>(metrics_.size()); }
  // Whether `trial` is among the best floor(n/eta) results right now.
  bool in_top(TrialId trial) const;

 private:
  struct Order {
    Mode mode;
    bool operator()(const Entry& a, const Entry& b) const {
      return ranks_before(a.metric, a.trial, b.metric, b.trial, mode);
    }
  };
  // The heap's order: its front is the entry that ranks first.
  struct RanksAfter {
    Order order;
    bool operator()(const Entry& a, const Entry& b) const { return order(b, a); }
  };
  Entry entry(TrialId trial) const { return {metrics_.at(trial), trial}; }
  void enter_top(const Entry& e);
  void leave_top(const Entry& e);
  void push_rest(const Entry& e);

  std::int64_t eta_;
  bool eager_;
  std::set<Entry, Order> top_;         // the best floor(n/eta) (eager: at least one)
  std::vector<Entry> rest_;            // everything else, a heap; all of top_ ranks before all of rest_
  std::set<Entry, Order> promotable_;  // the part of top_ not promoted yet and not NaN
  std::unordered_map<TrialId, double> metrics_;
  std::unordered_set<TrialId> promoted_;
};

}  // namespace packtune::tuners
