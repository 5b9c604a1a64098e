#pragma once
// One bracket of synchronous successive halving: every config of a rung is trained to the
// rung's budget, and only when the whole rung has reported do the best go on together. Used
// by the `sha` and `hyperband` tuners, which own the trials' configs.
#include <cstdint>
#include <deque>
#include <unordered_set>
#include <utility>
#include <vector>

#include "tuners/schedulers/brackets.hpp"
#include "tuners/tuner.hpp"

namespace packtune::tuners {

class SuccessiveHalvingBracket {
 public:
  // The bracket's trials are first_trial, first_trial+1, ... (one per config of rung 0).
  SuccessiveHalvingBracket(Bracket plan, TrialId first_trial, Mode mode);

  // Start (with an empty config, for the owner to fill), Resume (ditto), Wait while the rung
  // is still running, Finished once the top rung has reported.
  Job next_job();
  void on_result(TrialId trial, double metric);

  bool owns(TrialId trial) const;
  // Whether next_job would hand out a job now.
  bool has_work() const { return !done_ && !pending_.empty(); }
  bool finished() const;
  const Bracket& plan() const { return plan_; }

 private:
  void promote();

  Bracket plan_;
  TrialId first_trial_;
  Mode mode_;
  std::size_t rung_ = 0;
  std::deque<TrialId> pending_;  // jobs of the current rung not handed out yet
  std::unordered_set<TrialId> running_;  // a rung may hold 100,000 trials: no linear search
  std::vector<std::pair<double, TrialId>> results_;  // of the current rung
  bool done_ = false;
};

}  // namespace packtune::tuners
