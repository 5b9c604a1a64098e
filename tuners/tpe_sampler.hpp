#pragma once
// TPE, the tree-structured Parzen estimator (Bergstra et al., NeurIPS 2011), with Optuna's
// defaults. It draws at random until `startup_trials` trials have results, then learns from
// them.
//
// Which results it learns from under a multi-fidelity tuner (`multi_fidelity`):
//  - furthest (the default, Optuna's rule for pruned trials): every trial with its result at
//    the highest budget it reached; a trial that trained further ranks above one that stopped
//    earlier, and among equals the better metric wins. The good set is then mostly the
//    trials the tuner promoted, and every result counts from the start.
//  - highest_budget (BOHB's rule, Falkner et al., ICML 2018): only the highest budget at which
//    `startup_trials` trials have reported.
// tuner_bench measured furthest far ahead of highest_budget on all three of its functions:
// the low rungs, where highest_budget learns for most of a run, are biased.
//
// Failed and diverged results (NaN) are left out. The results are ranked (ties to the lower
// trial id) and the best min(ceil(gamma * n), 25) form the good set, the rest the bad set.
// With `constant_liar` (the default, as Optuna's), trials started but not yet reported join
// the bad set, so that parallel workers are not all sent to the same spot.
// Each set becomes a ParzenEstimator; `candidates` draws from the good one are scored by
// log l(x) - log g(x) and the highest wins (ties: the first drawn). Univariate by default,
// one parameter at a time; `multivariate` models them jointly.
//
// Everything depends on the seed and the order of suggest/observe calls, never on time, so a
// run's suggestions are reproduced by replaying its results.
#include <cstdint>
#include <map>
#include <random>
#include <vector>

#include "tuners/config_sampler.hpp"
#include "tuners/parzen_estimator.hpp"
#include "tuners/tuner.hpp"

namespace packtune::tuners {

enum class MultiFidelity { Furthest, HighestBudget };

struct TpeOptions {
  std::int64_t startup_trials = 10;
  double gamma = 0.1;
  std::int64_t candidates = 24;
  bool multivariate = false;
  MultiFidelity multi_fidelity = MultiFidelity::Furthest;
  bool constant_liar = true;
};

class TpeSampler : public ConfigSampler {
 public:
  TpeSampler(SearchSpace space, Mode mode, std::uint64_t seed, TpeOptions options);

  Suggestion suggest(TrialId trial) override;
  void observe(TrialId trial, const TrialConfig& config, double budget, double metric) override;

  // The size of the good set for `n` results.
  std::size_t good_count(std::size_t n) const;

 private:
  struct Observation {
    std::vector<double> point;  // each parameter in its ParzenAxis coordinate
    double metric = 0;
    double budget = 0;
  };
  using Results = std::map<TrialId, Observation>;  // by trial id: oldest first
  using Ranked = std::vector<std::pair<TrialId, const Observation*>>;

  std::vector<double> point_of(TrialId trial, const TrialConfig& config) const;
  // The results to learn from, best first, and what they are in `why`; empty while too few.
  Ranked ranked_results(nlohmann::json& why) const;
  // Draws for the parameters `axes` (indices into the space) from the good set's estimator,
  // scored against the bad set's; the best draw and its score.
  std::pair<std::vector<double>, double> best_candidate(const std::vector<std::size_t>& axes,
                                                        const std::vector<const Observation*>& good,
                                                        const std::vector<const Observation*>& bad);

  SearchSpace space_;
  Mode mode_;
  TpeOptions options_;
  std::mt19937_64 rng_;
  std::vector<ParzenAxis> axes_;
  std::map<double, Results> by_budget_;  // highest_budget: every budget's results
  Results furthest_;                     // furthest: each trial at the highest budget it reached
  Results pending_;                      // started, nothing reported yet: the constant liar's
};

}  // namespace packtune::tuners
