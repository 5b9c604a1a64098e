#include "tuners/fixed_budget_tuner.hpp"

namespace packtune::tuners {

Job FixedBudgetTuner::next_job() {
  if (next_id_ < trial_count()) {
    ++running_;
    const TrialId id = next_id_++;
    return Job::start(id, config_for(id), budget_);
  }
  return running_ > 0 ? Job::wait() : Job::finished();
}

void FixedBudgetTuner::on_result(TrialId /*trial*/, double /*budget*/, double /*metric*/) {
  --running_;
}

}  // namespace packtune::tuners
