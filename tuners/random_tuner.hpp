#pragma once
// Random search: `max_trials` configs drawn from the space, each trained to the maximum
// budget. Intermediate reports never stop a trial.
#include <random>

#include "tuners/tuner.hpp"

namespace packtune::tuners {

class RandomTuner : public Tuner {
 public:
  explicit RandomTuner(const TunerContext& context);

  Job next_job() override;
  void on_result(TrialId trial, double budget, double metric) override;
  std::string name() const override { return "random"; }

 private:
  TunerContext context_;
  std::mt19937_64 rng_;
  TrialId next_id_ = 0;
  std::int64_t running_ = 0;
};

}  // namespace packtune::tuners
