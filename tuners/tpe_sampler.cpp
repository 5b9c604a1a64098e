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

std::vector<double> TpeSampler::point_of(TrialId trial, const TrialConfig& config) const {
  std::vector<double> point;
  for (const auto& p : space_.params()) {
    const auto it = config.find(p.name);
    if (it == config.end()) throw Error("tpe: trial " + std::to_string(trial) + " has no " + p.name);
    point.push_back(to_axis(p, it->second));
  }
  return point;
}

void TpeSampler::put(Pool& pool, TrialId trial, Observation o) const {
  const auto key = [&](const Observation& x) {
    return std::make_tuple(-x.budget, mode_ == Mode::Max ? -x.metric : x.metric, trial);
  };
  auto [it, fresh] = pool.results.try_emplace(trial, o);
  if (!fresh) {
    pool.ranking.erase(key(it->second));
    it->second = std::move(o);
  }
  pool.ranking.insert(key(it->second));
}

void TpeSampler::observe(TrialId trial, const TrialConfig& config, double budget, double metric) {
  pending_.erase(trial);
  // A failed or diverged trial says nothing about where good configs are (Optuna leaves failed
  // trials out too), and must not replace what the trial reported before.
  if (!std::isfinite(metric)) return;
  Observation o{point_of(trial, config), metric, budget};
  if (options_.multi_fidelity == MultiFidelity::HighestBudget) {
    put(by_budget_[budget], trial, std::move(o));
    return;
  }
  const auto it = furthest_.results.find(trial);
  if (it == furthest_.results.end() || budget >= it->second.budget) put(furthest_, trial, std::move(o));
}

const TpeSampler::Pool* TpeSampler::modelled(nlohmann::json& why) const {
  const auto enough = static_cast<std::size_t>(options_.startup_trials);
  if (options_.multi_fidelity == MultiFidelity::Furthest) {
    return furthest_.results.size() >= enough ? &furthest_ : nullptr;
  }
  for (auto it = by_budget_.rbegin(); it != by_budget_.rend(); ++it) {
    if (it->second.results.size() >= enough) {
      why["budget"] = it->first;
      return &it->second;
    }
  }
  return nullptr;
}

const TpeSampler::Model& TpeSampler::model(const Members& good, const Members& bad) {
  const auto ids = [](const Members& set) {
    std::vector<TrialId> out;
    out.reserve(set.size());
    for (const auto& member : set) out.push_back(member.first);
    return out;
  };
  auto good_ids = ids(good), bad_ids = ids(bad);
  if (!model_.l.empty() && good_ids == model_.good && bad_ids == model_.bad) return model_;
  const auto columns = [&](const Members& set) {
    std::vector<std::vector<double>> out(axes_.size());
    for (std::size_t a = 0; a < axes_.size(); ++a) {
      out[a].reserve(set.size());
      for (const auto& member : set) out[a].push_back(member.second->point[a]);
    }
    return out;
  };
  const auto good_columns = columns(good), bad_columns = columns(bad);
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
  model_.good = std::move(good_ids);
  model_.bad = std::move(bad_ids);
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

Suggestion TpeSampler::suggest(TrialId trial) {
  nlohmann::json why = {{"sampler", "tpe"}};
  const Pool* pool = modelled(why);
  TrialConfig config;
  if (!pool) {
    config = space_.sample(rng_);
    why["random"] = true;
    why["reason"] = "fewer than " + std::to_string(options_.startup_trials) +
                    (options_.multi_fidelity == MultiFidelity::Furthest ? " trials" : " results at any budget") +
                    " have reported";
  } else {
    const std::size_t n_good = good_count(pool->results.size());
    std::vector<TrialId> good_ids;
    for (auto it = pool->ranking.begin(); good_ids.size() < n_good; ++it) good_ids.push_back(std::get<2>(*it));
    std::sort(good_ids.begin(), good_ids.end());
    // The recency weights need each set oldest first.
    Members good;
    nlohmann::json good_budgets = nlohmann::json::array();
    for (const auto id : good_ids) {
      good.emplace_back(id, &pool->results.at(id));
      good_budgets.push_back(good.back().second->budget);
    }
    // The bad set: the newest max_bad of the others, and the running trials (the liar's), which
    // a result may have overtaken in id. Both come in id order, so one merge orders them.
    Members reported, bad;
    const auto max_bad = static_cast<std::size_t>(options_.max_bad);
    for (auto it = pool->results.rbegin(); it != pool->results.rend() && reported.size() < max_bad; ++it) {
      if (!std::binary_search(good_ids.begin(), good_ids.end(), it->first)) reported.emplace_back(it->first, &it->second);
    }
    std::reverse(reported.begin(), reported.end());
    if (options_.constant_liar) {
      Members running;
      running.reserve(pending_.size());
      for (const auto& [id, o] : pending_) running.emplace_back(id, &o);
      bad.resize(reported.size() + running.size());
      std::merge(reported.begin(), reported.end(), running.begin(), running.end(), bad.begin());
    } else {
      bad = std::move(reported);
    }
    const Model& m = model(good, bad);

    const auto& params = space_.params();
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
