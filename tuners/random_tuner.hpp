#pragma once
// Random search: `max_trials` configs drawn from the space, each trained to the maximum
// budget. Intermediate reports never stop a trial.
#include <random>

#include "tuners/fixed_budget_tuner.hpp"

namespace packtune::tuners {

class RandomTuner : public FixedBudgetTuner {
 public:
  explicit RandomTuner(const TunerContext& context);

  std::string name() const override { return "random"; }

 protected:
  std::int64_t trial_count() const override { return context_.max_trials; }
  TrialConfig config_for(TrialId /*trial*/) override { return context_.space.sample(rng_); }

 private:
  TunerContext context_;
  std::mt19937_64 rng_;
};

}  // namespace packtune::tuners
