#pragma once
// Grid search: every combination of the space (choices as listed, randint every integer,
// uniform/loguniform `grid_points` evenly or log-evenly spaced points), each trained to the
// maximum budget, in grid order.
//
// Settings: "grid_points" (points per continuous axis, 1 ... 1000, default 3). `trials` is a
// limit: 0 runs the whole grid, and a limit below the grid's size is an error rather than a
// silently partial grid.
#include <memory>
#include <vector>

#include "tuners/tuner.hpp"

namespace packtune::tuners {

class GridTuner : public Tuner {
 public:
  explicit GridTuner(const TunerContext& context);

  Job next_job() override;
  void on_result(TrialId trial, double budget, double metric) override;
  std::string name() const override { return "grid"; }

  std::size_t grid_size() const { return grid_.size(); }

 private:
  double budget_;
  std::vector<TrialConfig> grid_;
  TrialId next_id_ = 0;
  std::int64_t running_ = 0;
};

}  // namespace packtune::tuners
