#include "tuners/job_rules.hpp"

#include <algorithm>
#include <cmath>

#include "packtune/error.hpp"
#include "tuners/tuner_settings.hpp"

namespace packtune::tuners {

bool budget_reaches(double point, double to) { return point >= to - 1e-9 * std::max(1.0, std::abs(to)); }

void JobRules::check(const Job& job) {
  // Built for an error only: the driver checks tens of thousands of jobs a second.
  const auto trial_name = [&job] { return "trial " + std::to_string(job.trial); };
  if (!std::isfinite(job.budget) || job.budget <= 0) {
    throw Error(tuner_ + ": job for " + trial_name() + " has budget " + std::to_string(job.budget) +
                "; expected a positive budget");
  }
  if (job.budget > max_budget_ && !budget_reaches(max_budget_, job.budget)) {
    throw Error(tuner_ + ": job for " + trial_name() + " has budget " + std::to_string(job.budget) +
                ", above the max budget " + std::to_string(max_budget_));
  }
  auto it = trials_.find(job.trial);
  if (job.kind == Job::Kind::Start) {
    if (it != trials_.end()) throw Error(tuner_ + ": started " + trial_name() + " twice");
    it = trials_.emplace(job.trial, Trial{}).first;
  } else if (it == trials_.end()) {
    throw Error(tuner_ + ": resumed " + trial_name() + ", which it never started");
  }
  auto& t = it->second;
  if (t.running) throw Error(tuner_ + ": " + trial_name() + " is already running");
  // An exploit starts where the other trial's checkpoint is, which must exist.
  double starts_at = t.reached;
  if (job.from_trial >= 0) {
    const auto from = trials_.find(job.from_trial);
    const auto from_name = "trial " + std::to_string(job.from_trial);
    if (job.kind != Job::Kind::Resume) {
      throw Error(tuner_ + ": started " + trial_name() + " from " + from_name + "'s checkpoint; only a resumed trial can take one");
    }
    if (job.from_trial == job.trial) throw Error(tuner_ + ": " + trial_name() + " takes its own checkpoint as another's");
    if (from == trials_.end() || !budget_reaches(from->second.reached, job.from_budget)) {
      throw Error(tuner_ + ": " + trial_name() + " takes " + from_name + "'s checkpoint at budget " +
                  number_text(job.from_budget) + ", which " + from_name + " has not reached");
    }
    starts_at = job.from_budget;
  }
  if (job.budget < starts_at && !budget_reaches(job.budget, starts_at)) {
    throw Error(tuner_ + ": resumed " + trial_name() + " to budget " + std::to_string(job.budget) + ", below the " +
                std::to_string(starts_at) + " it " + (job.from_trial >= 0 ? "starts from" : "has reached"));
  }
  t.reached = starts_at;
  t.running = true;
  ++running_;
}

void JobRules::result(TrialId trial, double budget) {
  auto it = trials_.find(trial);
  if (it == trials_.end()) return;
  if (it->second.running) --running_;
  it->second.running = false;
  it->second.reached = std::max(it->second.reached, budget);
}

void JobRules::check_wait() const {
  if (running_ > 0) return;
  throw Error(tuner_ + ": asked to wait while no job was running; it would never finish");
}

}  // namespace packtune::tuners
