#pragma once
// Learning curves made up from a seed: trial i trained to budget b has loss
//
//   loss(b) = a + (l0 - a) * exp(-b / tau) + noise,
//
// an exponential decay from l0 (about 1) to an asymptote a in [0.05, 0.5], at a speed tau
// between 0.02 and 0.32 of the max budget. The asymptote depends on the config (its squared
// distance from an optimum the seed places in the space, 70%) and on the trial (30%; all of it
// with an empty space); speed and l0 depend on the trial. Fast learners can end worse than slow
// ones, which is what makes early stopping a gamble worth simulating. The noise (sd 0.01) is
// a function of (seed, trial, budget), never of evaluation order. In "max" mode the metric is
// 1 - loss (an accuracy), so in both modes good configs win.
#include <cstdint>
#include <vector>

#include "tuners/simulate/objective.hpp"
#include "tuners/search_space.hpp"

namespace packtune::tuners {

class SyntheticObjective : public Objective {
 public:
  SyntheticObjective(SearchSpace space, std::uint64_t seed, Mode mode, double max_budget);

  double evaluate(std::int64_t index, const TrialConfig& config, double budget) override;
  std::string description() const override { return "synthetic"; }

  // The loss the trial converges to, for tests.
  double asymptote(std::int64_t index, const TrialConfig& config) const;

 private:
  // A deterministic draw in [0, 1) from (seed, index, salt).
  double draw(std::int64_t index, std::uint64_t salt) const;
  // Where the config's value of parameter `p` sits in its range, in [0, 1].
  double position(const ParamSpec& p, const TrialConfig& config) const;

  SearchSpace space_;
  std::uint64_t seed_;
  Mode mode_;
  double max_budget_;
  std::vector<double> optimum_;  // by parameter, in [0, 1]
};

}  // namespace packtune::tuners
