#include "tuners/tpe_sampler.hpp"

#include <algorithm>
#include <cmath>

#include "packtune/error.hpp"

namespace packtune::tuners {
namespace {

constexpr std::size_t kMaxGood = 25;  // Optuna's cap on the good set

}  // namespace

TpeSampler::TpeSampler(SearchSpace space, Mode mode, std::uint64_t seed, TpeOptions options)
    : space_(std::move(space)), mode_(mode), options_(options), rng_(seed) {
  if (options_.startup_trials < 1 || !(options_.gamma > 0 && options_.gamma <= 1) || options_.candidates < 1) {
    throw Error("tpe: startup_trials and candidates must be at least 1, gamma in (0, 1]");
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
  by_budget_[budget][trial] = std::move(o);
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

std::pair<std::vector<double>, double> TpeSampler::best_candidate(const std::vector<std::size_t>& axes,
                                                                  const std::vector<const Observation*>& good,
                                                                  const std::vector<const Observation*>& bad) {
  std::vector<ParzenAxis> sub;
  for (auto a : axes) sub.push_back(axes_[a]);
  const auto columns = [&](const std::vector<const Observation*>& set) {
    std::vector<std::vector<double>> out(axes.size());
    for (std::size_t i = 0; i < axes.size(); ++i) {
      out[i].reserve(set.size());
      for (const auto* o : set) out[i].push_back(o->point[axes[i]]);
    }
    return out;
  };
  const ParzenOptions parzen{1.0, options_.multivariate};
  const ParzenEstimator l(sub, columns(good), parzen);
  const ParzenEstimator g(sub, columns(bad), parzen);
  std::vector<double> best;
  double best_score = -INFINITY;
  // Integer and choice draws repeat: each distinct one is scored once.
  std::map<std::vector<double>, double> scored;
  for (auto& x : l.sample(rng_, static_cast<std::size_t>(options_.candidates))) {
    auto [it, fresh] = scored.try_emplace(x, 0.0);
    if (fresh) it->second = l.log_density(x) - g.log_density(x);
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
  // Ranked as every tuner ranks; the recency weights need each set oldest first.
  std::vector<std::pair<TrialId, const Observation*>> ranked;
  for (const auto& [id, o] : *results) ranked.emplace_back(id, &o);
  std::stable_sort(ranked.begin(), ranked.end(), [&](const auto& a, const auto& b) {
    return ranks_before(a.second->metric, a.first, b.second->metric, b.first, mode_);
  });
  const std::size_t n_good = good_count(ranked.size());
  std::vector<std::pair<TrialId, const Observation*>> good_set(ranked.begin(), ranked.begin() + static_cast<std::ptrdiff_t>(n_good));
  std::vector<std::pair<TrialId, const Observation*>> bad_set(ranked.begin() + static_cast<std::ptrdiff_t>(n_good), ranked.end());
  std::vector<const Observation*> good, bad;
  nlohmann::json good_ids = nlohmann::json::array();
  std::sort(good_set.begin(), good_set.end());
  std::sort(bad_set.begin(), bad_set.end());
  for (const auto& [id, o] : good_set) {
    good.push_back(o);
    good_ids.push_back(id);
  }
  for (const auto& [id, o] : bad_set) bad.push_back(o);

  const auto& params = space_.params();
  TrialConfig config;
  nlohmann::json ratios = nlohmann::json::object();
  if (options_.multivariate) {
    std::vector<std::size_t> all(params.size());
    for (std::size_t a = 0; a < all.size(); ++a) all[a] = a;
    const auto [x, score] = best_candidate(all, good, bad);
    for (std::size_t a = 0; a < params.size(); ++a) config[params[a].name] = from_axis(params[a], x[a]);
    ratios["joint"] = score;
  } else {
    for (std::size_t a = 0; a < params.size(); ++a) {
      const auto [x, score] = best_candidate({a}, good, bad);
      config[params[a].name] = from_axis(params[a], x[0]);
      ratios[params[a].name] = score;
    }
  }
  return {config,
          {{"sampler", "tpe"}, {"budget", budget}, {"good", good_ids}, {"bad", bad.size()}, {"log_ratio", ratios}}};
}

}  // namespace packtune::tuners
