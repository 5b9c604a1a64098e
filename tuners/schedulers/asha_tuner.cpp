#include "tuners/schedulers/asha_tuner.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include <nlohmann/json.hpp>

#include "packtune/error.hpp"
#include "tuners/schedulers/brackets.hpp"
#include "tuners/tuner_settings.hpp"

namespace packtune::tuners {

std::unique_ptr<Tuner> AshaTuner::asha(const TunerContext& context) {
  TunerSettings settings(context.settings, "asha");
  const auto eta = settings.eta();
  const int s_max = max_early_stopping_rate(context.min_budget, context.max_budget, eta);
  const auto s = settings.integer("s", 0, 0, s_max);
  const bool eager = settings.boolean("eager_promotion", false);
  auto sampler = make_sampler(context, settings);
  settings.finish();
  return std::unique_ptr<Tuner>(new AshaTuner(context, "asha", eta, {static_cast<int>(s)}, eager, std::move(sampler)));
}

std::unique_ptr<Tuner> AshaTuner::async_hyperband(const TunerContext& context) {
  TunerSettings settings(context.settings, "async_hyperband");
  const auto eta = settings.eta();
  const int s_max = max_early_stopping_rate(context.min_budget, context.max_budget, eta);
  const auto count = settings.integer("brackets", s_max + 1, 1, s_max + 1);
  const bool eager = settings.boolean("eager_promotion", false);
  auto sampler = make_sampler(context, settings);
  settings.finish();
  std::vector<int> rates;
  for (int s = 0; s < count; ++s) rates.push_back(s);
  return std::unique_ptr<Tuner>(new AshaTuner(context, "async_hyperband", eta, rates, eager, std::move(sampler)));
}

AshaTuner::AshaTuner(const TunerContext& context, std::string name, std::int64_t eta,
                     const std::vector<int>& early_stopping_rates, bool eager,
                     std::unique_ptr<ConfigSampler> sampler)
    : context_(context), name_(std::move(name)), sampler_(std::move(sampler)), eta_(eta), eager_(eager) {
  check_trials(context_, false);
  top_level_ = max_early_stopping_rate(context_.min_budget, context_.max_budget, eta);
  for (int s : early_stopping_rates) {
    AshaBracket b;
    b.s = s;
    b.budgets = asha_rung_budgets(context_.min_budget, context_.max_budget, eta, s);
    b.rungs.assign(b.budgets.size(), AshaRung(context_.mode, eta, eager));
    brackets_.push_back(std::move(b));
  }
}

Job AshaTuner::next_job() {
  // Promotions first, from the highest budget level down; the top level has nowhere to go.
  for (int level = top_level_ - 1; level >= 0; --level) {
    AshaBracket* from = nullptr;
    std::optional<AshaRung::Entry> best;
    for (auto& b : brackets_) {
      if (level < b.s) continue;
      const auto candidate = b.rungs[static_cast<std::size_t>(level - b.s)].best_promotable();
      if (candidate && (!best || ranks_before(candidate->metric, candidate->trial, best->metric,
                                              best->trial, context_.mode))) {
        best = candidate;
        from = &b;
      }
    }
    if (!best) continue;
    const auto rung = static_cast<std::size_t>(level - from->s);
    from->rungs[rung].mark_promoted(best->trial);
    auto& state = trials_[static_cast<std::size_t>(best->trial)];
    state.rung = static_cast<int>(rung) + 1;
    ++running_;
    return Job::resume(best->trial, configs_[static_cast<std::size_t>(best->trial)],
                       from->budgets[rung + 1]);
  }
  if (static_cast<std::int64_t>(trials_.size()) < context_.max_trials) {
    const auto id = static_cast<TrialId>(trials_.size());
    const int bracket = static_cast<int>(id % static_cast<TrialId>(brackets_.size()));
    trials_.push_back({bracket, 0});
    auto suggestion = sampler_->suggest(id);
    configs_.push_back(suggestion.config);
    ++running_;
    return Job::start(id, std::move(suggestion.config), brackets_[static_cast<std::size_t>(bracket)].budgets[0],
                      std::move(suggestion.why));
  }
  return running_ > 0 ? Job::wait() : Job::finished();
}

std::optional<double> AshaTuner::planned_budget() const {
  double total = 0;
  const auto brackets = static_cast<std::int64_t>(brackets_.size());
  for (std::int64_t b = 0; b < brackets; ++b) {
    // New trials go to the brackets in turn (next_job).
    std::int64_t n = context_.max_trials / brackets + (b < context_.max_trials % brackets ? 1 : 0);
    double below = 0;
    for (const double budget : brackets_[static_cast<std::size_t>(b)].budgets) {
      total += static_cast<double>(n) * (budget - below);
      below = budget;
      n /= eta_;
    }
  }
  return total;
}

double AshaTuner::sure_budget(std::int64_t trials) const {
  double reached = 0;
  const auto brackets = static_cast<std::int64_t>(brackets_.size());
  for (std::int64_t b = 0; b < brackets; ++b) {
    std::int64_t n = trials / brackets + (b < trials % brackets ? 1 : 0);
    for (const double budget : brackets_[static_cast<std::size_t>(b)].budgets) {
      if (n == 0) break;
      reached = std::max(reached, budget);
      n /= eta_;
    }
  }
  return reached;
}

std::vector<std::string> AshaTuner::warnings() const {
  // Eager promotion lets the best so far climb while a rung holds fewer than eta results.
  if (eager_ || context_.max_trials <= 0) return {};
  double top = 0;
  for (const auto& b : brackets_) top = std::max(top, b.budgets.back());
  const double sure = sure_budget(context_.max_trials);
  if (sure >= top) return {};
  // Bracket b of B fills its R rungs for certain once it holds eta^(R-1) trials, the floor
  // chain's end; new trials go to the brackets in turn, so it holds m of them from trial
  // (m - 1) B + b + 1 on. Computed, not searched: eta^(R-1) can be astronomically large.
  const auto brackets = static_cast<double>(brackets_.size());
  double enough = std::numeric_limits<double>::infinity();
  for (std::size_t b = 0; b < brackets_.size(); ++b) {
    const double m = std::pow(static_cast<double>(eta_), static_cast<double>(brackets_[b].budgets.size() - 1));
    enough = std::min(enough, (m - 1) * brackets + static_cast<double>(b) + 1);
  }
  const auto n = [](double v) { return nlohmann::json(v).dump(); };
  const std::string need = enough < 1e15 ? std::to_string(static_cast<std::int64_t>(enough)) : n(enough);
  const std::string trials = std::to_string(context_.max_trials);
  return {"tuner.trials " + trials + " may end the run before any trial trains to budget " + n(top) + ": " + name_ +
          " promotes the best 1/eta of a rung, so with eta " + std::to_string(eta_) +
          " it is sure to reach the top rung only from " + need + " trials on; with " + trials +
          " it is sure of budget " + n(sure) + ". Raise tuner.trials to " + need +
          ", or set \"eager_promotion\": true"};
}

void AshaTuner::on_result(TrialId trial, double budget, double metric) {
  if (trial < 0 || trial >= static_cast<TrialId>(trials_.size())) {
    throw Error(name_ + ": a result for trial " + std::to_string(trial) + ", which was never started");
  }
  const auto& state = trials_[static_cast<std::size_t>(trial)];
  --running_;
  brackets_[static_cast<std::size_t>(state.bracket)]
      .rungs[static_cast<std::size_t>(state.rung)]
      .add(trial, metric);
  sampler_->observe(trial, configs_[static_cast<std::size_t>(trial)], budget, metric);
}

}  // namespace packtune::tuners
