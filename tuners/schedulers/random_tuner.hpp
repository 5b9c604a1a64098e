#pragma once
// Random search: `max_trials` configs drawn from the space (or suggested by TPE, with
// "sampler": "tpe"), each trained to the maximum budget. Intermediate reports never stop a trial.
#include <memory>
#include <vector>

#include "tuners/schedulers/fixed_budget_tuner.hpp"

namespace packtune::tuners {

class RandomTuner : public FixedBudgetTuner {
 public:
  explicit RandomTuner(const TunerContext& context);

  std::string name() const override { return "random"; }

 protected:
  std::int64_t trial_count() const override { return context_.max_trials; }
  Suggestion config_for(TrialId trial) override;
  void observed(TrialId trial, double budget, double metric) override;

 private:
  TunerContext context_;
  std::unique_ptr<ConfigSampler> sampler_;
  std::vector<TrialConfig> configs_;  // by trial id
};

}  // namespace packtune::tuners
