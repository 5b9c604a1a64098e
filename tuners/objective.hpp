#pragma once
// What `packtune simulate` trains instead of a model: a function from (trial, budget) to the
// metric the trial would report. Objectives are deterministic, so a simulation depends only
// on the tuner, the objective and the seed.
#include <cstdint>
#include <memory>
#include <string>

#include "tuners/trial_config.hpp"
#include "tuners/tuner.hpp"

namespace packtune::tuners {

class Objective {
 public:
  virtual ~Objective() = default;

  // The metric of the trial created `index`-th (0-based) with `config`, trained to `budget`.
  // Throws InputError when the objective cannot answer (a table without that trial).
  virtual double evaluate(std::int64_t index, const TrialConfig& config, double budget) = 0;
  virtual std::string description() const = 0;
};

// "table:FILE" (see TableObjective) or "synthetic" (see SyntheticObjective); anything else is
// an InputError naming --objective.
std::unique_ptr<Objective> make_objective(const std::string& spec, const TunerContext& context);

}  // namespace packtune::tuners
