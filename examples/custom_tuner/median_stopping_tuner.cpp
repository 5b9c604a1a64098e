// A tuner plugin: the median stopping rule (Golovin et al., "Google Vizier", KDD 2017).
//
// Trials are drawn at random and trained towards the max budget. At each intermediate report,
// a trial is stopped when its best metric so far is worse than the median of the other
// trials' running averages up to the same budget. Trials are never stopped before
// `grace_budget`, nor before `min_trials` other trials have reported by that budget, so the
// first trials always run to the end and set the bar.
//
// Build it against an installed packtune (see CMakeLists.txt) and use it with
//   packtune simulate --tuner-plugin ./libmedian_stopping.so --tuner median_stopping ...
//
// Settings (the config's "tuner" object): "grace_budget" (default: the min budget),
// "min_trials" (default 3).
#include <algorithm>
#include <cmath>
#include <map>
#include <random>
#include <vector>

#include "packtune/error.hpp"
#include "tuners/tuner_registry.hpp"
#include "tuners/tuner_settings.hpp"

namespace {

using packtune::tuners::Decision;
using packtune::tuners::Job;
using packtune::tuners::Mode;
using packtune::tuners::TrialId;
using packtune::tuners::TunerContext;

class MedianStoppingTuner : public packtune::tuners::Tuner {
 public:
  explicit MedianStoppingTuner(const TunerContext& context) : context_(context), rng_(context.seed) {
    packtune::tuners::TunerSettings settings(context.settings, "median_stopping");
    grace_budget_ = settings.number("grace_budget", context.min_budget, 0);
    min_trials_ = settings.integer("min_trials", 3, 1, 1000000);
    settings.finish();
    packtune::tuners::check_trials(context, false);
    packtune::tuners::check_budgets(context.min_budget, context.max_budget);
  }

  Job next_job() override {
    if (next_id_ < context_.max_trials) {
      ++running_;
      curves_.emplace_back();
      return Job::start(next_id_++, context_.space.sample(rng_), context_.max_budget);
    }
    return running_ > 0 ? Job::wait() : Job::finished();
  }

  Decision on_report(TrialId trial, double budget, double metric) override {
    auto& curve = curves_.at(static_cast<std::size_t>(trial));
    curve.emplace_back(budget, metric);
    if (budget < grace_budget_) return Decision::Continue;

    std::vector<double> averages;
    for (std::size_t other = 0; other < curves_.size(); ++other) {
      if (static_cast<TrialId>(other) == trial) continue;
      double sum = 0;
      int count = 0;
      for (const auto& [b, m] : curves_[other]) {
        if (b > budget || std::isnan(m)) break;  // curves are recorded in budget order
        sum += m;
        ++count;
      }
      if (count > 0) averages.push_back(sum / count);
    }
    if (static_cast<std::int64_t>(averages.size()) < min_trials_) return Decision::Continue;

    const auto middle = averages.begin() + static_cast<std::ptrdiff_t>(averages.size() / 2);
    std::nth_element(averages.begin(), middle, averages.end());
    double median = *middle;
    if (averages.size() % 2 == 0) median = (median + *std::max_element(averages.begin(), middle)) / 2;

    double best = packtune::tuners::worst_value(context_.mode);
    for (const auto& [b, m] : curve) {
      if (packtune::tuners::better(m, best, context_.mode)) best = m;
    }
    return packtune::tuners::better(median, best, context_.mode) ? Decision::Stop
                                                                  : Decision::Continue;
  }

  void on_result(TrialId trial, double budget, double metric) override {
    --running_;
    auto& curve = curves_.at(static_cast<std::size_t>(trial));
    if (curve.empty() || curve.back().first < budget) curve.emplace_back(budget, metric);
  }

  std::string name() const override { return "median_stopping"; }

 private:
  TunerContext context_;
  std::mt19937_64 rng_;
  double grace_budget_ = 0;
  std::int64_t min_trials_ = 3;
  TrialId next_id_ = 0;
  std::int64_t running_ = 0;
  std::vector<std::vector<std::pair<double, double>>> curves_;  // by trial: (budget, metric)
};

}  // namespace

PACKTUNE_REGISTER_TUNER(MedianStoppingTuner, "median_stopping")
