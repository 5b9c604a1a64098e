#include "tuners/schedulers/random_tuner.hpp"

#include "packtune/error.hpp"
#include "tuners/tuner_settings.hpp"

namespace packtune::tuners {

RandomTuner::RandomTuner(const TunerContext& context)
    : FixedBudgetTuner(context.max_budget), context_(context) {
  check_trials(context_, false);
  check_budgets(context_.min_budget, context_.max_budget);
  TunerSettings settings(context_.settings, "random");
  sampler_ = make_sampler(context_, settings);
  settings.finish();
}

Suggestion RandomTuner::config_for(TrialId trial) {
  auto suggestion = sampler_->suggest(trial);
  configs_.push_back(suggestion.config);
  return suggestion;
}

void RandomTuner::observed(TrialId trial, double budget, double metric) {
  if (trial < 0 || trial >= static_cast<TrialId>(configs_.size())) {
    throw Error("random: a result for trial " + std::to_string(trial) + ", which was never started");
  }
  sampler_->observe(trial, configs_[static_cast<std::size_t>(trial)], budget, metric);
}

}  // namespace packtune::tuners
