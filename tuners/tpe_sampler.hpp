#pragma once
// TPE, the tree-structured Parzen estimator (Bergstra et al., NeurIPS 2011), with Optuna's
// defaults, and BOHB's rule for multi-fidelity results (Falkner et al., ICML 2018): it models
// the highest budget at which at least `startup_trials` trials have reported, and draws at
// random until some budget has that many.
//
// Failed and diverged results (NaN) are left out. At that budget the results are ranked
// (better first, ties to the lower trial id) and the best min(ceil(gamma * n), 25) form the good set, the rest the bad set.
// The bad set is capped at the newest `max_bad` (1,000) of those, by trial id, so that a
// suggestion's cost stops growing with the results (under ASHA on many workers they reach tens
// of thousands); the recency weights already give the oldest the least weight, and the cap,
// a function of trial ids alone, replays exactly. Past the cap TPE differs from Optuna's.
// Each set becomes a ParzenEstimator; `candidates` draws from the good one are scored by
// log l(x) - log g(x) and the highest wins (ties: the first drawn). Univariate by default,
// one parameter at a time; `multivariate` models them jointly.
//
// Everything depends on the seed and the order of suggest/observe calls, never on time, so a
// run's suggestions are reproduced by replaying its results.
#include <cstdint>
#include <map>
#include <random>
#include <set>
#include <vector>

#include "tuners/config_sampler.hpp"
#include "tuners/parzen_estimator.hpp"
#include "tuners/tuner.hpp"

namespace packtune::tuners {

struct TpeOptions {
  std::int64_t startup_trials = 10;
  double gamma = 0.1;
  std::int64_t candidates = 24;
  bool multivariate = false;
  // The bad set's cap: the newest (highest trial id) this many of the results outside the good
  // set. It bounds a suggestion's cost however many results a budget gathers.
  std::int64_t max_bad = 1000;
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
  };
  using Results = std::map<TrialId, Observation>;  // by trial id: oldest first
  // Results' (metric, trial) keys in rank order, kept as results arrive so that a suggestion
  // reads the good set off the front rather than sorting every result. The metric is negated
  // in Max mode, so the pairs' own order is ranks_before's.
  using Ranking = std::set<std::pair<double, TrialId>>;
  // The estimators of the last suggestion and the observations they were built from: kept
  // while the good and bad sets' points stay the same (no result changed them), as when
  // suggestions come several at a time. Univariate: one pair per parameter; multivariate: one.
  struct Model {
    std::vector<std::vector<double>> good, bad;  // axis -> observation, oldest first
    std::vector<ParzenEstimator> l, g;
  };

  // The budget to model: the highest with enough results; null when none has.
  const Results* modelled(double& budget) const;
  // The estimators for these good and bad sets: model_, rebuilt only if they differ from its.
  const Model& model(const std::vector<const Observation*>& good, const std::vector<const Observation*>& bad);
  // `candidates` draws from `l`, scored by log l(x) - log g(x); the best draw and its score.
  std::pair<std::vector<double>, double> best_candidate(const ParzenEstimator& l, const ParzenEstimator& g);

  SearchSpace space_;
  Mode mode_;
  TpeOptions options_;
  std::mt19937_64 rng_;
  std::vector<ParzenAxis> axes_;
  std::map<double, Results> by_budget_;
  std::map<double, Ranking> ranking_;  // by budget, as by_budget_
  Model model_;
};

}  // namespace packtune::tuners
