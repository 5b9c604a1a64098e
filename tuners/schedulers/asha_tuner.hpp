#pragma once
// ASHA (`asha`) and asynchronous Hyperband (`async_hyperband`), after Li et al., MLSys 2020.
//
// ASHA with minimum early-stopping rate s has rung k at budget min*eta^(k+s), up to the
// largest such budget <= max. On each request it looks at the rungs from the top down: a trial
// completed in rung k is promotable if it is among the best floor(n_k/eta) of the n_k trials
// completed there and has not been promoted from rung k yet; the best promotable one (ties:
// lower trial id) goes to rung k+1. If there is none, a new trial starts in the bottom rung,
// unless the trial limit is reached: then it waits, or finishes when nothing runs.
//
// Asynchronous Hyperband runs ASHA brackets s = 0 ... brackets-1 side by side: new trials go
// to the brackets in turn, and the promotion search runs over the budget levels from the top
// down across all brackets (at one level every bracket trains to the same budget, so their
// results compare; ties: lower trial id).
//
// Settings: "eta" (integer >= 2, default 3); asha: "s" (0 ... s_max, default 0);
// async_hyperband: "brackets" (1 ... s_max+1, default s_max+1); both: "eager_promotion"
// (default false: the paper's floor(n/eta); true: the best so far at a rung is promotable
// while fewer than eta results are in, see AshaRung). `trials` must be >= 1.
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "tuners/schedulers/asha_rung.hpp"
#include "tuners/samplers/config_sampler.hpp"
#include "tuners/tuner.hpp"

namespace packtune::tuners {

class AshaTuner : public Tuner {
 public:
  static std::unique_ptr<Tuner> asha(const TunerContext& context);
  static std::unique_ptr<Tuner> async_hyperband(const TunerContext& context);

  Job next_job() override;
  void on_result(TrialId trial, double budget, double metric) override;
  std::string name() const override { return name_; }
  // A floor, not an exact figure: each rung promotes at least the best 1/eta of the trials
  // it completes (all of them are promotable once every result is in), and more when trials
  // it promoted early fall out of its top 1/eta later.
  std::optional<double> planned_budget() const override;
  // A trial limit too small for any bracket's top rung: each rung is sure to promote only the
  // best floor(n/eta) of its n trials, so with fewer than eta^(rungs-1) trials in a bracket
  // a run may end without a trial trained to the max budget.
  std::vector<std::string> warnings() const override;

 private:
  struct AshaBracket {
    int s = 0;
    std::vector<double> budgets;  // by rung, bottom first
    std::vector<AshaRung> rungs;
  };
  struct TrialState {
    int bracket = 0;
    int rung = 0;  // the rung its running or last job trains to
  };

  AshaTuner(const TunerContext& context, std::string name, std::int64_t eta,
            const std::vector<int>& early_stopping_rates, bool eager, std::unique_ptr<ConfigSampler> sampler);

  TunerContext context_;
  std::string name_;
  std::unique_ptr<ConfigSampler> sampler_;
  std::vector<AshaBracket> brackets_;
  int top_level_ = 0;  // s_max: the level of every bracket's top rung
  std::vector<TrialState> trials_;
  std::vector<TrialConfig> configs_;
  std::int64_t running_ = 0;
  std::int64_t eta_ = 3;
  bool eager_ = false;

  // The highest budget a trial is sure to reach when `trials` new trials go to the brackets
  // in turn (the floor(n/eta) chain of planned_budget).
  double sure_budget(std::int64_t trials) const;
};

}  // namespace packtune::tuners
