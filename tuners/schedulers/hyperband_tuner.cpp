#include "tuners/schedulers/hyperband_tuner.hpp"

#include "packtune/error.hpp"
#include "tuners/tuner_settings.hpp"

namespace packtune::tuners {

std::unique_ptr<Tuner> HyperbandTuner::hyperband(const TunerContext& context) {
  TunerSettings settings(context.settings, "hyperband");
  const auto eta = settings.eta();
  auto sampler = make_sampler(context, settings);
  settings.finish();
  check_trials(context, true);
  return std::unique_ptr<Tuner>(new HyperbandTuner(
      context, "hyperband", hyperband_brackets(context.min_budget, context.max_budget, eta), eta, std::move(sampler)));
}

std::unique_ptr<Tuner> HyperbandTuner::successive_halving(const TunerContext& context) {
  TunerSettings settings(context.settings, "sha");
  const auto eta = settings.eta();
  auto sampler = make_sampler(context, settings);
  settings.finish();
  check_trials(context, true);
  const int s_max = max_early_stopping_rate(context.min_budget, context.max_budget, eta);
  Bracket bracket = hyperband_bracket(context.min_budget, context.max_budget, eta, s_max);
  if (context.max_trials > 0) bracket = resize_bracket(bracket, context.max_trials, eta);
  // One bracket; the limit equals its size, so the sweep never repeats.
  TunerContext once = context;
  once.max_trials = bracket.rungs.front().n;
  return std::unique_ptr<Tuner>(new HyperbandTuner(once, "sha", {bracket}, eta, std::move(sampler)));
}

HyperbandTuner::HyperbandTuner(const TunerContext& context, std::string name,
                               std::vector<Bracket> sweep, std::int64_t eta,
                               std::unique_ptr<ConfigSampler> sampler)
    : context_(context), name_(std::move(name)), sweep_(std::move(sweep)), eta_(eta),
      sampler_(std::move(sampler)) {}

std::optional<Bracket> HyperbandTuner::plan_after(std::size_t opened, std::int64_t planned) const {
  const bool one_sweep = context_.max_trials == 0;
  if (one_sweep ? opened >= sweep_.size() : planned >= context_.max_trials) return std::nullopt;
  Bracket plan = sweep_[opened % sweep_.size()];
  const std::int64_t n = plan.rungs.front().n;
  if (!one_sweep && planned + n > context_.max_trials) plan = resize_bracket(plan, context_.max_trials - planned, eta_);
  return plan;
}

std::optional<double> HyperbandTuner::planned_budget() const {
  double total = 0;
  std::int64_t planned = 0;
  for (std::size_t opened = 0;; ++opened) {
    const auto plan = plan_after(opened, planned);
    if (!plan) return total;
    double below = 0;  // a promoted trial resumes from the rung below
    for (const auto& rung : plan->rungs) {
      total += static_cast<double>(rung.n) * (rung.budget - below);
      below = rung.budget;
    }
    planned += plan->rungs.front().n;
  }
}

std::vector<std::string> HyperbandTuner::warnings() const {
  if (name_ != "hyperband" || context_.max_trials == 0) return {};
  std::int64_t sweep = 0;
  for (const auto& bracket : sweep_) sweep += bracket.rungs.front().n;
  std::int64_t planned = 0;
  for (std::size_t opened = 0;; ++opened) {
    const auto plan = plan_after(opened, planned);
    if (!plan) return {};
    const auto& whole = sweep_[opened % sweep_.size()];
    if (plan->rungs.front().n < whole.rungs.front().n) {
      const auto n = [](std::int64_t v) { return std::to_string(v); };
      return {"tuner.trials " + n(context_.max_trials) + " cuts a Hyperband sweep short: one sweep is " + n(sweep) +
              " trials in " + n(static_cast<std::int64_t>(sweep_.size())) + " brackets, so bracket s=" + n(whole.s) +
              " starts " + n(plan->rungs.front().n) + " of its " + n(whole.rungs.front().n) +
              " trials and promotes fewer; set trials to 0 for one whole sweep, or to a multiple of " + n(sweep)};
    }
    planned += plan->rungs.front().n;
  }
}

bool HyperbandTuner::open_bracket() {
  const auto next = plan_after(next_in_sweep_, trials_planned_);
  if (!next) return false;
  const Bracket plan = *next;
  ++next_in_sweep_;
  const auto id = next_bracket_++;
  open_.emplace(id, SuccessiveHalvingBracket(plan, trials_planned_, context_.mode));
  by_first_trial_[trials_planned_] = id;
  if (open_.at(id).has_work()) with_work_.insert(id);
  opened_.push_back(plan);
  trials_planned_ += plan.rungs.front().n;
  return true;
}

Job HyperbandTuner::with_config(Job job) const {
  if (job.kind == Job::Kind::Resume) job.config = configs_.at(static_cast<std::size_t>(job.trial));
  return job;
}

Job HyperbandTuner::next_job() {
  // Older brackets first, so promotions never wait behind new trials.
  if (!with_work_.empty()) {
    const auto id = *with_work_.begin();
    auto& bracket = open_.at(id);
    Job job = bracket.next_job();
    if (!bracket.has_work()) with_work_.erase(id);
    if (job.kind == Job::Kind::Start) {
      // Brackets hand out their trial ids in order and a bracket opens only when the older
      // ones have nothing to start, so ids arrive here as 0, 1, 2, ...
      if (job.trial != static_cast<TrialId>(configs_.size())) {
        throw Error(name_ + ": internal error, trial " + std::to_string(job.trial) +
                    " started out of order");
      }
      auto suggestion = sampler_->suggest(job.trial);
      job.config = std::move(suggestion.config);
      job.why = std::move(suggestion.why);
      configs_.push_back(job.config);
      return job;
    }
    if (job.kind == Job::Kind::Resume) return with_config(std::move(job));
  }
  if (open_bracket()) return next_job();
  return open_.empty() ? Job::finished() : Job::wait();
}

void HyperbandTuner::on_result(TrialId trial, double budget, double metric) {
  auto owner = by_first_trial_.upper_bound(trial);
  if (owner != by_first_trial_.begin()) {
    --owner;
    auto it = open_.find(owner->second);
    if (it != open_.end() && it->second.owns(trial)) {
      it->second.on_result(trial, metric);
      sampler_->observe(trial, configs_.at(static_cast<std::size_t>(trial)), budget, metric);
      if (it->second.has_work()) with_work_.insert(it->first);
      if (it->second.finished()) {
        open_.erase(it);
        by_first_trial_.erase(owner);
      }
      return;
    }
  }
  throw Error(name_ + ": a result for trial " + std::to_string(trial) +
              ", which no open bracket has started");
}

std::vector<Bracket> HyperbandTuner::opened_brackets() const { return opened_; }

}  // namespace packtune::tuners
