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
// The bad set keeps the newest `max_bad` (1,000) of those, by trial id, so that a
// suggestion's cost stops growing with the results (under ASHA on many workers they reach tens
// of thousands); the recency weights already give the oldest the least weight, and the cap,
// a function of trial ids alone, replays exactly. Past the cap TPE differs from Optuna's.
// With `constant_liar` (the default, as Optuna's), trials started but not yet reported join
// the bad set too, so that parallel workers are not all sent to the same spot.
// Each set becomes a ParzenEstimator; `candidates` draws from the good one are scored by
// log l(x) - log g(x) and the highest wins (ties: the first drawn). Univariate by default,
// one parameter at a time; `multivariate` models them jointly.
//
// A running experiment changes the bad set by a few trials between suggestions: one starts
// (the newest joins), the cap drops the oldest result, now and then the good set takes one
// or gives one back. So from 200 kernels on (sliding_from), a univariate g of a continuous or choice
// parameter is a SlidingParzen that follows those changes instead of being rebuilt (a change
// of more than a quarter of the set rebuilds it). Its densities equal the rebuilt estimator's
// to rounding (within 1e-13 on the log in the tests) rather than to the last bit: the
// suggestions are still a function of the seed and the calls alone.
//
// Everything depends on the seed and the order of suggest/observe calls, never on time, so a
// run's suggestions are reproduced by replaying its results.
#include <cstdint>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <tuple>
#include <vector>

#include "tuners/samplers/config_sampler.hpp"
#include "tuners/samplers/parzen_estimator.hpp"
#include "tuners/samplers/sliding_parzen.hpp"
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
  // The bad set's cap on reported results: the newest (highest trial id) this many outside the
  // good set. It bounds a suggestion's cost however many results arrive.
  std::int64_t max_bad = 1000;
  // From this many bad-set trials on, g follows the bad set (SlidingParzen) instead of being
  // rebuilt; below, a rebuild costs little. Not a config key: a test sets it past any run's
  // bad set to compare the two ways.
  std::size_t sliding_from = 200;
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
  // Results to rank, by trial id (oldest first), and their rank order kept as results arrive,
  // so that a suggestion reads the good set off the front instead of sorting every result.
  // A key is (-budget, metric, trial), the metric negated in Max mode: further first, then
  // better, then the lower trial id, which is ranks_before's order.
  struct Pool {
    std::map<TrialId, Observation> results;
    std::set<std::tuple<double, double, TrialId>> ranking;
    std::vector<TrialId> ids;  // the results' trials, ascending: walked from the newest end
  };
  // The estimators of the last suggestion and the trials they were built from: kept while the
  // good and bad sets hold the same trials in the same order (no result changed them), as when
  // suggestions come several at a time. A trial's point is its config's, which never changes,
  // so the ids decide the estimators. Univariate: one pair per parameter; multivariate: one.
  using Members = std::vector<std::pair<TrialId, const Observation*>>;  // oldest first
  struct Model {
    std::vector<TrialId> good, bad;
    // The points of `bad`, in its order, where an estimator is rebuilt from them; empty where
    // every parameter's g follows the bad set.
    std::vector<std::vector<double>> bad_points;
    std::vector<ParzenEstimator> l;
    // g, per parameter (one if multivariate): the rebuilt estimator, or where `sliding` has
    // one, that.
    std::vector<std::optional<ParzenEstimator>> g;
    std::vector<std::optional<SlidingParzen>> sliding;
  };

  std::vector<double> point_of(TrialId trial, const TrialConfig& config) const;
  // The points' columns, one per parameter.
  std::vector<std::vector<double>> columns(const std::vector<const std::vector<double>*>& points) const;
  void put(Pool& pool, TrialId trial, Observation o) const;
  // The pool the rule learns from; null while too few trials have reported. Sets `why`'s budget
  // under highest_budget.
  const Pool* modelled(nlohmann::json& why) const;
  // The estimators for these good and bad sets: model_, rebuilt only if they differ from its.
  template <typename Point>
  const Model& model(const Members& good, std::vector<TrialId> bad, const Point& point);
  // g for the bad set `bad` (trial ids, ascending), following model_.bad where it can
  // (SlidingParzen), else rebuilt. `point` gives a trial's point.
  template <typename Point>
  void model_bad(std::vector<TrialId> bad, const Point& point);
  // `candidates` draws from `l`, scored by log l(x) - log g(x), g one of the two; the best draw
  // and its score.
  std::pair<std::vector<double>, double> best_candidate(const ParzenEstimator& l, const ParzenEstimator* g,
                                                        const SlidingParzen* sliding);

  SearchSpace space_;
  Mode mode_;
  TpeOptions options_;
  std::mt19937_64 rng_;
  std::vector<ParzenAxis> axes_;
  std::map<double, Pool> by_budget_;           // highest_budget: every budget's results
  Pool furthest_;                              // furthest: each trial at the highest budget it reached
  std::map<TrialId, Observation> pending_;     // started, nothing reported yet: the constant liar's
  std::vector<TrialId> pending_ids_;           // pending_'s, ascending
  Model model_;
};

}  // namespace packtune::tuners
