#pragma once
// What `packtune simulate` trains instead of a model: a function from (trial, budget) to the
// metric the trial would report and, for an objective that knows it, how long the training
// took. Objectives are deterministic, so a simulation depends only on the tuner, the
// objective and the seed.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "tuners/trial_config.hpp"
#include "tuners/tuner.hpp"

namespace packtune::tuners {

// One answer of an objective: the metric, and the simulated time that training the trial up
// to that budget took, where the objective knows it better than the budget does.
struct Evaluation {
  double metric = 0;
  // Simulated seconds from the budget the job started at to this one (finite, >= 0). None:
  // the budget added, the simulator's time model when nothing says otherwise.
  std::optional<double> cost;
};

class Objective {
 public:
  virtual ~Objective() = default;

  // The metric of the trial created `index`-th (0-based) with `config`, trained to `budget`.
  // Throws InputError when the objective cannot answer (a table without that trial).
  virtual double evaluate(std::int64_t index, const TrialConfig& config, double budget) = 0;
  // What the simulator asks: the same metric, for a job that trains the trial from budget
  // `from` (0 for a new trial) up to `budget`, with its cost where the objective has one.
  // Objectives keyed by budget alone (tables, synthetic curves) keep this default: no cost.
  virtual Evaluation evaluate_from(std::int64_t index, const TrialConfig& config, double /*from*/,
                                   double budget) {
    return {evaluate(index, config, budget), std::nullopt};
  }
  virtual std::string description() const = 0;
};

// The objectives make_objective makes, as messages list them, followed by `more` (a caller's
// own, such as the CLI's "exec:CMD"): "table:FILE, synthetic or exec:CMD".
std::string objective_choices(const std::string& more = "");

// "table:FILE" (see TableObjective) or "synthetic" (see SyntheticObjective); anything else is
// an InputError naming --objective and objective_choices(more).
std::unique_ptr<Objective> make_objective(const std::string& spec, const TunerContext& context,
                                          const std::string& more = "");

}  // namespace packtune::tuners
