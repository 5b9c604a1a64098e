#pragma once
// The base of tuners that train every trial once, straight to the max budget, with no
// promotion and no early stopping (random and grid search): they differ only in how many
// trials there are and which config each one gets.
#include <cstdint>

#include "tuners/samplers/config_sampler.hpp"
#include "tuners/tuner.hpp"

namespace packtune::tuners {

class FixedBudgetTuner : public Tuner {
 public:
  Job next_job() override;
  void on_result(TrialId trial, double budget, double metric) override;
  std::optional<double> planned_budget() const override {
    return static_cast<double>(trial_count()) * budget_;
  }

 protected:
  explicit FixedBudgetTuner(double budget) : budget_(budget) {}

  virtual std::int64_t trial_count() const = 0;
  // Called once per trial, in id order.
  virtual Suggestion config_for(TrialId trial) = 0;
  // Every result, for a sampler that learns.
  virtual void observed(TrialId /*trial*/, double /*budget*/, double /*metric*/) {}

 private:
  double budget_;
  TrialId next_id_ = 0;
  std::int64_t running_ = 0;
};

}  // namespace packtune::tuners
