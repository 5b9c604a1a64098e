#include "tuners/schedulers/pbt_tuner.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "packtune/error.hpp"
#include "tuners/job_rules.hpp"
#include "tuners/tuner_settings.hpp"

namespace packtune::tuners {

std::unique_ptr<Tuner> PbtTuner::pbt(const TunerContext& context) {
  TunerSettings settings(context.settings, "pbt");
  PbtOptions o;
  // The population is the trial count: `trials` says it as well as `population` does.
  const bool has_population = settings.has("population");
  if (!has_population && context.max_trials == 1) {
    throw InputError("tuner.trials: 1 trial is no population; pbt needs at least 2 (its population)");
  }
  o.population = settings.integer("population", context.max_trials > 0 ? context.max_trials : 8, 2, 1000000);
  if (has_population && context.max_trials > 0 && context.max_trials != o.population) {
    throw InputError("tuner.trials: " + std::to_string(context.max_trials) + " trials for a pbt population of " +
                     std::to_string(o.population) + "; give one of trials and population, or the same number");
  }
  const bool has_interval = settings.has("interval");
  o.interval = settings.number("interval", context.min_budget, 0);
  check_budget_setting(context, has_interval ? "tuner.interval" : "tuner.interval (budget.min by default)", o.interval);
  o.quantile = settings.number("quantile", 0.25, 0);
  if (!(o.quantile > 0 && o.quantile <= 0.5)) {
    throw InputError("tuner.quantile: expected a fraction in (0, 0.5] for the pbt tuner, got " + number_text(o.quantile));
  }
  o.resample_probability = settings.number("resample_probability", 0.25, 0);
  if (o.resample_probability > 1) {
    throw InputError("tuner.resample_probability: expected a probability from 0 to 1 for the pbt tuner, got " +
                     number_text(o.resample_probability));
  }
  o.perturbation_factors = settings.numbers("perturbation_factors", o.perturbation_factors, 0);
  o.perturb = settings.strings("perturb", {});
  settings.finish();
  return std::make_unique<PbtTuner>(context, std::move(o));
}

PbtTuner::PbtTuner(const TunerContext& context, PbtOptions options)
    : context_(context), options_(std::move(options)), rng_(context.seed) {
  check_budgets(context_.min_budget, context_.max_budget);
  if (options_.population < 2) throw InputError("tuner.population: pbt needs a population of at least 2");
  check_budget_setting(context_, "tuner.interval", options_.interval);
  if (options_.perturbation_factors.empty()) {
    throw InputError("tuner: pbt needs at least one perturbation factor");
  }
  if (options_.perturb.empty()) {
    throw InputError("tuner.perturb: list the hyper-parameters pbt may change during training, for example [\"lr\"]");
  }
  for (const auto& name : options_.perturb) {
    const auto& params = context_.space.params();
    if (std::none_of(params.begin(), params.end(), [&](const ParamSpec& p) { return p.name == name; })) {
      throw InputError("tuner.perturb: " + name + " is not a parameter of the space");
    }
  }
  const auto n = static_cast<std::size_t>(options_.population);
  metrics_.assign(n, worst_value(context_.mode));
  reported_.assign(n, false);
  for (std::size_t m = 0; m < n; ++m) {
    configs_.push_back(context_.space.sample(rng_));
    queue_.push_back(Job::start(static_cast<TrialId>(m), configs_.back(), generation_budget(1)));
  }
}

std::size_t PbtTuner::exploit_count() const {
  const auto n = static_cast<double>(options_.population);
  const auto k = static_cast<std::int64_t>(std::llround(options_.quantile * n));
  return static_cast<std::size_t>(std::clamp<std::int64_t>(k, 1, options_.population / 2));
}

double PbtTuner::generation_budget(std::int64_t generation) const {
  const double b = static_cast<double>(generation) * options_.interval;
  return budget_reaches(b, context_.max_budget) ? context_.max_budget : b;
}

std::optional<double> PbtTuner::planned_budget() const {
  return static_cast<double>(options_.population) * context_.max_budget;
}

Job PbtTuner::next_job() {
  if (!queue_.empty()) {
    Job job = std::move(queue_.front());
    queue_.pop_front();
    return job;
  }
  return finished_ ? Job::finished() : Job::wait();
}

void PbtTuner::on_result(TrialId trial, double /*budget*/, double metric) {
  if (trial < 0 || trial >= options_.population) {
    throw Error("pbt: a result for trial " + std::to_string(trial) + ", which is not a member of its population");
  }
  const auto m = static_cast<std::size_t>(trial);
  metrics_[m] = metric;
  if (!reported_[m]) {
    reported_[m] = true;
    ++reported_count_;
  }
  if (reported_count_ == reported_.size()) end_generation();
}

void PbtTuner::end_generation() {
  const double reached = generation_budget(generation_);
  std::fill(reported_.begin(), reported_.end(), false);
  reported_count_ = 0;
  if (budget_reaches(reached, context_.max_budget)) {
    finished_ = true;
    return;
  }
  std::vector<TrialId> order(metrics_.size());
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](TrialId a, TrialId b) {
    return ranks_before(metrics_[static_cast<std::size_t>(a)], a, metrics_[static_cast<std::size_t>(b)], b, context_.mode);
  });
  const std::size_t k = exploit_count();
  const auto failed = [&](TrialId m) { return std::isnan(metrics_[static_cast<std::size_t>(m)]); };
  // Donors: the top k that have a checkpoint to give (a failed member has none).
  std::vector<TrialId> donors;
  for (std::size_t i = 0; i < k && !failed(order[i]); ++i) donors.push_back(order[i]);
  if (donors.empty()) {  // every member failed: nothing to go on from
    finished_ = true;
    return;
  }
  // Exploited: the bottom k, and any member that failed (it has no checkpoint of its own).
  std::vector<bool> exploited(order.size(), false);
  for (std::size_t i = order.size() - k; i < order.size(); ++i) exploited[static_cast<std::size_t>(order[i])] = true;
  for (const auto m : order) exploited[static_cast<std::size_t>(m)] = exploited[static_cast<std::size_t>(m)] || failed(m);

  // The exploits go out first, in member order, and the others after them: a donor goes on
  // only once every member that takes its checkpoint at this budget has been started.
  const double next = generation_budget(++generation_);
  for (std::size_t m = 0; m < order.size(); ++m) {
    if (!exploited[m]) continue;
    const auto pick = static_cast<std::size_t>(unit_draw(rng_) * static_cast<double>(donors.size()));
    const TrialId donor = donors[std::min(pick, donors.size() - 1)];
    configs_[m] = explore(configs_[static_cast<std::size_t>(donor)], rng_);
    queue_.push_back(Job::exploit(static_cast<TrialId>(m), configs_[m], next, donor, reached));
  }
  for (std::size_t m = 0; m < order.size(); ++m) {
    if (!exploited[m]) queue_.push_back(Job::resume(static_cast<TrialId>(m), configs_[m], next));
  }
}

TrialConfig PbtTuner::explore(const TrialConfig& config, std::mt19937_64& rng) const {
  TrialConfig out = config;
  for (const auto& p : context_.space.params()) {
    if (std::find(options_.perturb.begin(), options_.perturb.end(), p.name) == options_.perturb.end()) continue;
    if (unit_draw(rng) < options_.resample_probability) {
      SearchSpace one;
      one.add(p);
      out[p.name] = one.sample(rng).at(p.name);
      continue;
    }
    const double u = unit_draw(rng);
    auto& value = out.at(p.name);
    if (p.kind == ParamSpec::Kind::Choice) {
      const auto at = std::find(p.values.begin(), p.values.end(), value);
      const auto index = static_cast<std::int64_t>(at == p.values.end() ? 0 : at - p.values.begin());
      const auto last = static_cast<std::int64_t>(p.values.size()) - 1;
      value = p.values[static_cast<std::size_t>(std::clamp<std::int64_t>(index + (u < 0.5 ? -1 : 1), 0, last))];
      continue;
    }
    const auto& factors = options_.perturbation_factors;
    const double factor = factors[std::min(factors.size() - 1, static_cast<std::size_t>(u * static_cast<double>(factors.size())))];
    const double x = std::clamp(as_number(value, p.name) * factor, p.low, p.high);
    if (p.kind == ParamSpec::Kind::RandInt) {
      value = static_cast<std::int64_t>(std::llround(x));
    } else {
      value = x;
    }
  }
  return out;
}

}  // namespace packtune::tuners
