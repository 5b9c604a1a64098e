#include "spec/lr_schedule.hpp"

#include <algorithm>
#include <cmath>

namespace packtune::spec {
namespace {

constexpr double kPi = 3.14159265358979323846;

// OneCycleLR's _annealing_cos.
double cos_anneal(double start, double end, double pct) { return end + (start - end) / 2.0 * (std::cos(kPi * pct) + 1); }

double one_cycle(const ScheduleSteps& steps, std::int64_t step) {
  const double total = static_cast<double>(std::max<std::int64_t>(steps.total, 2));
  // OneCycleLR's phase ends: float(pct_start * total_steps) - 1, then total_steps - 1.
  const double rise_end = steps.warmup > 0 ? static_cast<double>(steps.warmup) - 1 : kOneCycleRise * total - 1;
  const double end = total - 1;
  const double initial = 1.0 / kOneCycleDiv, last = initial / kOneCycleFinalDiv;
  const double i = std::min(static_cast<double>(step), end);
  if (i <= rise_end) return cos_anneal(initial, 1.0, rise_end > 0 ? i / rise_end : 1.0);
  return cos_anneal(1.0, last, (i - rise_end) / std::max(end - rise_end, 1.0));
}

}  // namespace

const std::vector<std::string>& schedule_names() {
  static const std::vector<std::string> names{"constant", "cosine", "linear", "step", "one_cycle"};
  return names;
}

double lr_factor(const LrSchedule& schedule, const ScheduleSteps& steps, std::int64_t step) {
  if (schedule.name == "one_cycle") return one_cycle(steps, step);
  const std::int64_t warmup = std::min(steps.warmup, steps.total);
  if (step < warmup) return kWarmupStart + (1 - kWarmupStart) * static_cast<double>(step) / static_cast<double>(warmup);
  // The schedule proper starts where warmup ends, over the steps that are left.
  const auto span = static_cast<double>(std::max<std::int64_t>(steps.total - warmup, 1));
  const double t = std::min(static_cast<double>(step - warmup), span);
  if (schedule.name == "cosine") return (1 + std::cos(kPi * t / span)) / 2;
  if (schedule.name == "linear") return 1 - t / span;
  if (schedule.name == "step") {
    const auto every = std::max<std::int64_t>(steps.step_every, 1);
    return std::pow(schedule.factor, static_cast<double>(static_cast<std::int64_t>(t) / every));
  }
  return 1;
}

}  // namespace packtune::spec
