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

std::vector<double> TpeSampler::point_of(TrialId trial, const TrialConfig& config) const {
  std::vector<double> point;
  for (const auto& p : space_.params()) {
    const auto it = config.find(p.name);
    if (it == config.end()) throw Error("tpe: trial " + std::to_string(trial) + " has no " + p.name);
    point.push_back(to_axis(p, it->second));
  }
  return point;
}

void TpeSampler::observe(TrialId trial, const TrialConfig& config, double budget, double metric) {
  pending_.erase(trial);
  // A failed or diverged trial says nothing about where good configs are (Optuna leaves failed
  // trials out too), and must not replace what the trial reported before.
  if (!std::isfinite(metric)) return;
  Observation o{point_of(trial, config), metric, budget};
  if (options_.multi_fidelity == MultiFidelity::HighestBudget) {
    by_budget_[budget][trial] = std::move(o);
    return;
  }
  auto [it, fresh] = furthest_.try_emplace(trial, o);
  if (!fresh && budget >= it->second.budget) it->second = std::move(o);
}

TpeSampler::Ranked TpeSampler::ranked_results(nlohmann::json& why) const {
  const auto enough = static_cast<std::size_t>(options_.startup_trials);
  const Results* results = nullptr;
  if (options_.multi_fidelity == MultiFidelity::Furthest) {
    if (furthest_.size() >= enough) results = &furthest_;
  } else {
    for (auto it = by_budget_.rbegin(); it != by_budget_.rend() && !results; ++it) {
      if (it->second.size() >= enough) {
        results = &it->second;
        why["budget"] = it->first;
      }
    }
  }
  Ranked ranked;
  if (!results) return ranked;
  for (const auto& [id, o] : *results) ranked.emplace_back(id, &o);
  std::stable_sort(ranked.begin(), ranked.end(), [&](const auto& a, const auto& b) {
    if (a.second->budget != b.second->budget) return a.second->budget > b.second->budget;
    return ranks_before(a.second->metric, a.first, b.second->metric, b.first, mode_);
  });
  return ranked;
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

Suggestion TpeSampler::suggest(TrialId trial) {
  nlohmann::json why = {{"sampler", "tpe"}};
  const Ranked ranked = ranked_results(why);
  TrialConfig config;
  if (ranked.empty()) {
    config = space_.sample(rng_);
    why["random"] = true;
    why["reason"] = "fewer than " + std::to_string(options_.startup_trials) +
                    (options_.multi_fidelity == MultiFidelity::Furthest ? " trials" : " results at any budget") +
                    " have reported";
  } else {
    // The recency weights need each set oldest first.
    const auto n_good = static_cast<std::ptrdiff_t>(good_count(ranked.size()));
    Ranked good_set(ranked.begin(), ranked.begin() + n_good);
    Ranked bad_set(ranked.begin() + n_good, ranked.end());
    if (options_.constant_liar) {
      for (const auto& [id, o] : pending_) bad_set.emplace_back(id, &o);
    }
    std::sort(good_set.begin(), good_set.end());
    std::sort(bad_set.begin(), bad_set.end());
    std::vector<const Observation*> good, bad;
    nlohmann::json good_ids = nlohmann::json::array(), good_budgets = nlohmann::json::array();
    for (const auto& [id, o] : good_set) {
      good.push_back(o);
      good_ids.push_back(id);
      good_budgets.push_back(o->budget);
    }
    for (const auto& [id, o] : bad_set) bad.push_back(o);

    const auto& params = space_.params();
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
    why["good"] = good_ids;
    if (options_.multi_fidelity == MultiFidelity::Furthest) why["good_budgets"] = good_budgets;
    why["bad"] = bad.size();
    if (options_.constant_liar) why["running"] = pending_.size();
    why["log_ratio"] = ratios;
  }
  if (options_.constant_liar) pending_[trial] = {point_of(trial, config), 0, 0};
  return {config, why};
}

}  // namespace packtune::tuners
