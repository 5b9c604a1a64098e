#include "tuners/schedulers/grid_tuner.hpp"

#include "packtune/error.hpp"
#include "tuners/tuner_settings.hpp"

namespace packtune::tuners {

GridTuner::GridTuner(const TunerContext& context) : FixedBudgetTuner(context.max_budget) {
  TunerSettings settings(context.settings, "grid");
  const auto points = settings.integer("grid_points", 3, 1, 1000);
  settings.finish();
  check_trials(context, true);
  check_budgets(context.min_budget, context.max_budget);
  grid_ = context.space.grid(static_cast<int>(points));
  if (context.max_trials > 0 && static_cast<std::size_t>(context.max_trials) < grid_.size()) {
    throw InputError("tuner.trials (--trials): " + std::to_string(context.max_trials) +
                     " is fewer than the " + std::to_string(grid_.size()) +
                     " points of the grid; expected at least that many, or 0 for the whole grid");
  }
}

}  // namespace packtune::tuners
