#include "tuners/schedulers/fixed_budget_tuner.hpp"

namespace packtune::tuners {

Job FixedBudgetTuner::next_job() {
  if (next_id_ < trial_count()) {
    ++running_;
    const TrialId id = next_id_++;
    auto suggestion = config_for(id);
    return Job::start(id, std::move(suggestion.config), budget_, std::move(suggestion.why));
  }
  return running_ > 0 ? Job::wait() : Job::finished();
}

void FixedBudgetTuner::on_result(TrialId trial, double budget, double metric) {
  --running_;
  observed(trial, budget, metric);
}

}  // namespace packtune::tuners
