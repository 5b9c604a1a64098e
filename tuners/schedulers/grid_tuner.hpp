#pragma once
// Grid search: every combination of the space (choices as listed, randint every integer,
// uniform/loguniform `grid_points` evenly or log-evenly spaced points), each trained to the
// maximum budget, in grid order.
//
// Settings: "grid_points" (points per continuous axis, 1 ... 1000, default 3). `trials` is a
// limit: 0 runs the whole grid, and a limit below the grid's size is an error rather than a
// silently partial grid.
#include <vector>

#include "tuners/schedulers/fixed_budget_tuner.hpp"

namespace packtune::tuners {

class GridTuner : public FixedBudgetTuner {
 public:
  explicit GridTuner(const TunerContext& context);

  std::string name() const override { return "grid"; }

 protected:
  std::int64_t trial_count() const override { return static_cast<std::int64_t>(grid_.size()); }
  Suggestion config_for(TrialId trial) override { return {grid_[static_cast<std::size_t>(trial)], nullptr}; }

 private:
  std::vector<TrialConfig> grid_;
};

}  // namespace packtune::tuners
