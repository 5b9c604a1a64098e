#pragma once
// The rules every tuner's jobs keep (docs/tuners.md, "Writing a tuner"), checked where jobs are
// taken: by `packtune simulate` and by the driver of `packtune run`. A tuner that breaks one
// (a plugin with a bug) stops the experiment with the broken rule named, instead of training a
// trial it never started, with a config it never sampled, to a budget the schedule has not got.
#include <unordered_map>
#include <string>

#include "tuners/tuner.hpp"

namespace packtune::tuners {

class JobRules {
 public:
  JobRules(std::string tuner, double max_budget) : tuner_(std::move(tuner)), max_budget_(max_budget) {}

  // A Start or Resume the tuner gave: throws Error naming the tuner and the rule it broke,
  // else counts the trial as running.
  void check(const Job& job);
  // The trial's job ended having reached `budget`.
  void result(TrialId trial, double budget);
  // The tuner said Wait: with no job of it running, nothing would ever change.
  void check_wait() const;

 private:
  struct Trial {
    double reached = 0;
    bool running = false;
  };
  std::string tuner_;
  double max_budget_;
  std::unordered_map<TrialId, Trial> trials_;  // looked up per job, never walked
  std::size_t running_ = 0;  // trials with a job out: Wait is asked often, a scan per Wait would not do
};

// Budgets are sums and products of user numbers: this close counts as reached.
bool budget_reaches(double point, double to);

}  // namespace packtune::tuners
