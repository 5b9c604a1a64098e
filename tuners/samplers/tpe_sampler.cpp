#include "tuners/samplers/tpe_sampler.hpp"

#include <algorithm>
#include <cmath>

#include "packtune/error.hpp"

namespace packtune::tuners {
namespace {

constexpr std::size_t kMaxGood = 25;  // Optuna's cap on the good set
constexpr double kScoreMargin = 1e-9;  // far above a log density's rounding, far below a score's spread

// What turns `before` into `now` (trial ids, ascending): the ids that left, and the places in
// `now` of those that joined.
struct Change {
  std::vector<TrialId> left;
  std::vector<std::size_t> joined;
};
Change change(const std::vector<TrialId>& before, const std::vector<TrialId>& now) {
  Change c;
  std::size_t i = 0, j = 0;
  while (i < before.size() || j < now.size()) {
    if (j == now.size() || (i < before.size() && before[i] < now[j])) {
      c.left.push_back(before[i++]);
    } else if (i == before.size() || now[j] < before[i]) {
      c.joined.push_back(j++);
    } else {
      ++i, ++j;
    }
  }
  return c;
}

}  // namespace

TpeSampler::TpeSampler(SearchSpace space, Mode mode, std::uint64_t seed, TpeOptions options)
    : space_(std::move(space)), mode_(mode), options_(options), rng_(seed) {
  if (options_.startup_trials < 1 || !(options_.gamma > 0 && options_.gamma <= 1) || options_.candidates < 1 ||
      options_.max_bad < 1) {
    throw Error("tpe: startup_trials, candidates and max_bad must be at least 1, gamma in (0, 1]");
  }
  if (options_.sliding_from < SlidingParzen::kMinKernels) {
    throw Error("tpe: sliding_from must be at least " + std::to_string(SlidingParzen::kMinKernels));
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
  } else {
    // Results come in nearly in trial order: the place is at or near the end.
    auto at = pool.ids.end();
    while (at != pool.ids.begin() && *std::prev(at) > trial) --at;
    pool.ids.insert(at, trial);
  }
  pool.ranking.insert(key(it->second));
}

void TpeSampler::observe(TrialId trial, const TrialConfig& config, double budget, double metric) {
  if (pending_.erase(trial)) {
    pending_ids_.erase(std::lower_bound(pending_ids_.begin(), pending_ids_.end(), trial));
  }
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

std::vector<std::vector<double>> TpeSampler::columns(const std::vector<const std::vector<double>*>& points) const {
  std::vector<std::vector<double>> out(axes_.size());
  for (std::size_t a = 0; a < axes_.size(); ++a) {
    out[a].reserve(points.size());
    for (const auto* point : points) out[a].push_back((*point)[a]);
  }
  return out;
}

template <typename Point>
const TpeSampler::Model& TpeSampler::model(const Members& good, std::vector<TrialId> bad, const Point& point) {
  std::vector<TrialId> good_ids;
  std::vector<const std::vector<double>*> good_points;
  for (const auto& [id, o] : good) {
    good_ids.push_back(id);
    good_points.push_back(&o->point);
  }
  // A model half updated (an estimator or a lookup threw) must not stand for these sets: the
  // next suggestion then builds it anew.
  struct Undo {
    Model& model;
    bool done = false;
    ~Undo() {
      if (!done) model = Model{};
    }
  } undo{model_};
  if (model_.l.empty() || good_ids != model_.good) {
    model_.l.clear();
    const ParzenOptions parzen{1.0, options_.multivariate};
    if (options_.multivariate) {
      model_.l.emplace_back(axes_, columns(good_points), parzen);
    } else {
      const auto good_columns = columns(good_points);
      for (std::size_t a = 0; a < axes_.size(); ++a) {
        model_.l.emplace_back(std::vector<ParzenAxis>{axes_[a]}, std::vector<std::vector<double>>{good_columns[a]}, parzen);
      }
    }
    model_.good = std::move(good_ids);
  }
  model_bad(std::move(bad), point);
  undo.done = true;
  return model_;
}

template <typename Point>
void TpeSampler::model_bad(std::vector<TrialId> bad, const Point& point) {
  const auto changed = change(model_.bad, bad);
  if (!model_.g.empty() && changed.left.empty() && changed.joined.empty()) return;
  // Every point is needed where an estimator is rebuilt: those that stayed are moved over from
  // the last model's (when it kept them) and those that joined looked up. Where every
  // parameter's g follows the change, only those that joined are.
  bool all_slide = !options_.multivariate && bad.size() >= options_.sliding_from;
  for (const auto& axis : axes_) all_slide = all_slide && SlidingParzen::handles(axis);
  std::vector<std::vector<double>> points;
  if (!all_slide) {
    const bool kept = model_.bad_points.size() == model_.bad.size();
    points.reserve(bad.size());
    for (std::size_t i = 0, j = 0, next_join = 0; j < bad.size(); ++j) {
      const bool joined = next_join < changed.joined.size() && changed.joined[next_join] == j;
      next_join += joined;
      if (joined || !kept) {
        points.push_back(point(bad[j]));
        continue;
      }
      while (model_.bad[i] != bad[j]) ++i;  // past those that left
      points.push_back(std::move(model_.bad_points[i++]));
    }
  }
  model_.bad_points = std::move(points);
  model_.bad = std::move(bad);
  const auto& ids = model_.bad;

  const ParzenOptions parzen{1.0, options_.multivariate};
  model_.g.clear();
  if (options_.multivariate) {
    std::vector<const std::vector<double>*> all;
    all.reserve(ids.size());
    for (const auto& p : model_.bad_points) all.push_back(&p);
    model_.g.emplace_back(std::in_place, axes_, columns(all), parzen);
    model_.sliding.clear();
    return;
  }
  // Past a quarter of the set changed, a sliding estimator is built anew.
  const bool follow = 4 * (changed.left.size() + changed.joined.size()) <= ids.size();
  // The points a sliding estimator takes in, looked up once for every parameter: those that
  // joined, or all of them where it is built anew.
  using Taken = std::vector<std::pair<TrialId, const std::vector<double>*>>;
  Taken joined_points, all_points;
  const auto take = [&](Taken& into, std::size_t j) { into.emplace_back(ids[j], &point(ids[j])); };
  model_.g.resize(axes_.size());
  model_.sliding.resize(axes_.size());
  for (std::size_t a = 0; a < axes_.size(); ++a) {
    auto& sliding = model_.sliding[a];
    if (!SlidingParzen::handles(axes_[a]) || ids.size() < options_.sliding_from) {
      sliding.reset();
      std::vector<double> column;
      column.reserve(ids.size());
      for (const auto& p : model_.bad_points) column.push_back(p[a]);
      model_.g[a].emplace(std::vector<ParzenAxis>{axes_[a]}, std::vector<std::vector<double>>{std::move(column)}, parzen);
      continue;
    }
    if (sliding && follow) {
      if (joined_points.size() != changed.joined.size()) {
        for (const auto j : changed.joined) take(joined_points, j);
      }
      for (const auto id : changed.left) sliding->erase(id);
      for (const auto& [id, p] : joined_points) sliding->insert(id, (*p)[a]);
    } else {
      if (all_points.size() != ids.size()) for (std::size_t j = 0; j < ids.size(); ++j) take(all_points, j);
      std::vector<std::pair<std::int64_t, double>> kernels;
      kernels.reserve(ids.size());
      for (const auto& [id, p] : all_points) kernels.emplace_back(id, (*p)[a]);
      sliding.emplace(axes_[a], kernels, parzen.prior_weight);
    }
  }
}

std::pair<std::vector<double>, double> TpeSampler::best_candidate(const ParzenEstimator& l, const ParzenEstimator* g,
                                                                  const SlidingParzen* sliding) {
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
      const double limit = best.empty() ? INFINITY : lx - best_score + kScoreMargin;
      it->second = lx - (sliding ? sliding->log_density_below(x[0], limit) : g->log_density_below(x, limit));
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
  // Each trial is suggested once, before it reports: the bad set counts it once, at one point.
  bool known = pending_.count(trial) || furthest_.results.count(trial);
  for (const auto& [budget, pool] : by_budget_) known = known || pool.results.count(trial);
  if (known) throw Error("tpe: trial " + std::to_string(trial) + " was suggested before");
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
    std::vector<TrialId> reported, bad;
    const auto max_bad = static_cast<std::size_t>(options_.max_bad);
    reported.reserve(std::min(max_bad, pool->ids.size()));
    for (auto it = pool->ids.rbegin(); it != pool->ids.rend() && reported.size() < max_bad; ++it) {
      if (!std::binary_search(good_ids.begin(), good_ids.end(), *it)) reported.push_back(*it);
    }
    std::reverse(reported.begin(), reported.end());
    if (options_.constant_liar) {
      bad.resize(reported.size() + pending_ids_.size());
      std::merge(reported.begin(), reported.end(), pending_ids_.begin(), pending_ids_.end(), bad.begin());
    } else {
      bad = std::move(reported);
    }
    const auto point = [&](TrialId id) -> const std::vector<double>& {
      const auto it = pool->results.find(id);
      return it != pool->results.end() ? it->second.point : pending_.at(id).point;
    };
    const std::size_t bad_size = bad.size();
    const Model& m = model(good, std::move(bad), point);

    const auto& params = space_.params();
    nlohmann::json ratios = nlohmann::json::object();
    if (options_.multivariate) {
      const auto [x, score] = best_candidate(m.l[0], &*m.g[0], nullptr);
      for (std::size_t a = 0; a < params.size(); ++a) config[params[a].name] = from_axis(params[a], x[a]);
      ratios["joint"] = score;
    } else {
      for (std::size_t a = 0; a < params.size(); ++a) {
        const auto [x, score] = best_candidate(m.l[a], m.g[a] ? &*m.g[a] : nullptr,
                                               m.sliding[a] ? &*m.sliding[a] : nullptr);
        config[params[a].name] = from_axis(params[a], x[0]);
        ratios[params[a].name] = score;
      }
    }
    why["good"] = good_ids;
    if (options_.multi_fidelity == MultiFidelity::Furthest) why["good_budgets"] = good_budgets;
    why["bad"] = bad_size;
    if (options_.constant_liar) why["running"] = pending_.size();
    why["log_ratio"] = ratios;
  }
  if (options_.constant_liar) {
    pending_.emplace(trial, Observation{point_of(trial, config), 0, 0});
    pending_ids_.insert(std::upper_bound(pending_ids_.begin(), pending_ids_.end(), trial), trial);
  }
  return {config, why};
}

}  // namespace packtune::tuners
