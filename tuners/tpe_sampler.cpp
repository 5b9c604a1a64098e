#include "tuners/tpe_sampler.hpp"

#include <algorithm>
#include <cmath>

#include "packtune/error.hpp"

namespace packtune::tuners {
namespace {

constexpr std::size_t kMaxGood = 25;  // Optuna's cap on the good set
constexpr double kScoreMargin = 1e-9;  // far above a log density's rounding, far below a score's spread

}  // namespace

TpeSampler::TpeSampler(SearchSpace space, Mode mode, std::uint64_t seed, TpeOptions options)
    : space_(std::move(space)), mode_(mode), options_(options), rng_(seed) {
  if (options_.startup_trials < 1 || !(options_.gamma > 0 && options_.gamma <= 1) || options_.candidates < 1 ||
      options_.max_bad < 1) {
    throw Error("tpe: startup_trials, candidates and max_bad must be at least 1, gamma in (0, 1]");
  }
  for (const auto& p : space_.params()) axes_.push_back(parzen_axis(p));
}

std::size_t TpeSampler::good_count(std::size_t n) const {
  const auto wanted = static_cast<std::size_t>(std::ceil(options_.gamma * static_cast<double>(n)));
  return std::min({wanted, kMaxGood, n});
}

void TpeSampler::observe(TrialId trial, const TrialConfig& config, double budget, double metric) {
  // A failed or diverged trial says nothing about where good configs are (Optuna leaves failed
  // trials out too), and must not replace what the trial reported at that budget before.
  if (!std::isfinite(metric)) return;
  Observation o;
  for (const auto& p : space_.params()) {
    const auto it = config.find(p.name);
    if (it == config.end()) throw Error("tpe: trial " + std::to_string(trial) + " has no " + p.name);
    o.point.push_back(to_axis(p, it->second));
  }
  o.metric = metric;
  auto& ranking = ranking_[budget];
  const auto key = [&](double m) { return std::make_pair(mode_ == Mode::Max ? -m : m, trial); };
  auto& results = by_budget_[budget];
  if (const auto it = results.find(trial); it != results.end()) ranking.erase(key(it->second.metric));
  ranking.insert(key(metric));
  results[trial] = std::move(o);
}

const TpeSampler::Results* TpeSampler::modelled(double& budget) const {
  const auto enough = static_cast<std::size_t>(std::max<std::int64_t>(1, options_.startup_trials));
  for (auto it = by_budget_.rbegin(); it != by_budget_.rend(); ++it) {
    if (it->second.size() >= enough) {
      budget = it->first;
      return &it->second;
    }
  }
  return nullptr;
}

const TpeSampler::Model& TpeSampler::model(const std::vector<const Observation*>& good,
                                            const std::vector<const Observation*>& bad) {
  const auto columns = [&](const std::vector<const Observation*>& set) {
    std::vector<std::vector<double>> out(axes_.size());
    for (std::size_t a = 0; a < axes_.size(); ++a) {
      out[a].reserve(set.size());
      for (const auto* o : set) out[a].push_back(o->point[a]);
    }
    return out;
  };
  auto good_columns = columns(good), bad_columns = columns(bad);
  // An estimator is a function of its columns alone: the same columns, the same estimators.
  if (!model_.l.empty() && good_columns == model_.good && bad_columns == model_.bad) return model_;
  model_.l.clear();
  model_.g.clear();
  const ParzenOptions parzen{1.0, options_.multivariate};
  if (options_.multivariate) {
    model_.l.emplace_back(axes_, good_columns, parzen);
    model_.g.emplace_back(axes_, bad_columns, parzen);
  } else {
    for (std::size_t a = 0; a < axes_.size(); ++a) {
      model_.l.emplace_back(std::vector<ParzenAxis>{axes_[a]}, std::vector<std::vector<double>>{good_columns[a]}, parzen);
      model_.g.emplace_back(std::vector<ParzenAxis>{axes_[a]}, std::vector<std::vector<double>>{bad_columns[a]}, parzen);
    }
  }
  model_.good = std::move(good_columns);
  model_.bad = std::move(bad_columns);
  return model_;
}

std::pair<std::vector<double>, double> TpeSampler::best_candidate(const ParzenEstimator& l, const ParzenEstimator& g) {
  std::vector<double> best;
  double best_score = -INFINITY;
  // Integer and choice draws repeat: each distinct one is scored once.
  std::map<std::vector<double>, double> scored;
  for (auto& x : l.sample(rng_, static_cast<std::size_t>(options_.candidates))) {
    auto [it, fresh] = scored.try_emplace(x, 0.0);
    if (fresh) {
      // A candidate whose g reaches l(x) / exp(best) cannot win, and g's sum stops there: its
      // score is then only an upper bound, below the best's (repeats of it lose too). The
      // margin keeps rounding from deciding what the full sum would have.
      const double lx = l.log_density(x);
      it->second = lx - (best.empty() ? g.log_density(x) : g.log_density_below(x, lx - best_score + kScoreMargin));
    }
    const double score = it->second;
    if (best.empty() || score > best_score) {
      best_score = score;
      best = std::move(x);
    }
  }
  return {best, best_score};
}

Suggestion TpeSampler::suggest(TrialId /*trial*/) {
  double budget = 0;
  const Results* results = modelled(budget);
  if (!results) {
    return {space_.sample(rng_),
            {{"sampler", "tpe"}, {"random", true},
             {"reason", "no budget has " + std::to_string(options_.startup_trials) + " results yet"}}};
  }
  // Ranked as every tuner ranks (ranking_ keeps the order); the recency weights need each set
  // oldest first.
  const auto& ranking = ranking_.at(budget);
  const std::size_t n_good = good_count(results->size());
  std::vector<TrialId> good_set;
  for (auto it = ranking.begin(); good_set.size() < n_good; ++it) good_set.push_back(it->second);
  std::sort(good_set.begin(), good_set.end());
  // The bad set: the newest max_bad of the others.
  std::vector<const Observation*> good, bad;
  nlohmann::json good_ids = nlohmann::json::array();
  for (const auto id : good_set) {
    good.push_back(&results->at(id));
    good_ids.push_back(id);
  }
  const auto max_bad = static_cast<std::size_t>(options_.max_bad);
  for (auto it = results->rbegin(); it != results->rend() && bad.size() < max_bad; ++it) {
    if (!std::binary_search(good_set.begin(), good_set.end(), it->first)) bad.push_back(&it->second);
  }
  std::reverse(bad.begin(), bad.end());
  const Model& m = model(good, bad);

  const auto& params = space_.params();
  TrialConfig config;
  nlohmann::json ratios = nlohmann::json::object();
  if (options_.multivariate) {
    const auto [x, score] = best_candidate(m.l[0], m.g[0]);
    for (std::size_t a = 0; a < params.size(); ++a) config[params[a].name] = from_axis(params[a], x[a]);
    ratios["joint"] = score;
  } else {
    for (std::size_t a = 0; a < params.size(); ++a) {
      const auto [x, score] = best_candidate(m.l[a], m.g[a]);
      config[params[a].name] = from_axis(params[a], x[0]);
      ratios[params[a].name] = score;
    }
  }
  return {config,
          {{"sampler", "tpe"}, {"budget", budget}, {"good", good_ids}, {"bad", bad.size()}, {"log_ratio", ratios}}};
}

}  // namespace packtune::tuners
