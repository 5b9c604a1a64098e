#pragma once
// Runs a real Tuner against an Objective instead of training: W simulated workers, and
// simulated time in which a job takes as long as the budget it adds (resuming a trial from
// budget 3 to 9 takes 6), or as long as the objective's cost says when it gives one. The
// tuner is asked for jobs exactly as the driver asks, whenever a worker is free, so what a
// simulation shows is what `packtune run` would schedule.
//
// A job's end must be known when it starts, so its final budget is evaluated then; its
// intermediate reports are evaluated when they are due, spaced over the job's duration in
// proportion to the budget (a job from 0 to 4 costing 100 reports at budget 1 at time 25).
// Their costs are not used.
//
// Jobs that finish at the same time complete in the order they started, so with one worker
// jobs finish in exactly the order they start.
#include <limits>
#include <cstdint>
#include <functional>
#include <string>

#include "tuners/simulate/objective.hpp"
#include "tuners/tuner.hpp"

namespace packtune::tuners {

struct SimulationOptions {
  int workers = 1;
  // Budget between intermediate reports (Tuner::on_report); 0: a job reports only its result.
  double report_every = 0;
  // A job above this budget breaks the schedule (JobRules); infinite: not checked.
  double max_budget = std::numeric_limits<double>::infinity();
};

struct SimulationEvent {
  enum class Kind { Start, Result };
  Kind kind = Kind::Start;
  TrialId trial = -1;
  double budget = 0;  // Start: the budget the job trains up to; Result: the budget reached
  double metric = 0;  // Result only
  double time = 0;
  bool resume = false;   // Start: a promotion of a paused trial
  bool stopped = false;  // Result: the tuner stopped the job early via on_report
  // Start of an exploit (Job::exploit): whose checkpoint the trial goes on from, at which
  // budget, and the config it goes on with. -1 otherwise.
  TrialId from_trial = -1;
  double from_budget = 0;
  TrialConfig config;
};

struct SimulationSummary {
  std::string tuner;
  std::int64_t trials = 0;  // Start jobs
  std::int64_t jobs = 0;    // Start and Resume jobs
  std::int64_t stopped = 0;
  TrialId best_trial = -1;  // best metric among the results at the highest budget reached
  double best_metric = 0;
  double best_budget = 0;
  TrialConfig best_config;
  double time = 0;          // when the last job finished (the objective's cost units, if any)
  double total_budget = 0;  // budget added by all jobs
};

class Simulator {
 public:
  // Throws InputError when `options` are out of range.
  Simulator(Tuner& tuner, Objective& objective, Mode mode, SimulationOptions options);

  // Runs to the tuner's Finished. Throws Error when the tuner misbehaves (waits with nothing
  // running, resumes a trial it never started, shrinks a trial's budget) or the objective
  // gives a cost that is negative or not finite.
  SimulationSummary run(const std::function<void(const SimulationEvent&)>& on_event = {});

 private:
  Tuner& tuner_;
  Objective& objective_;
  Mode mode_;
  SimulationOptions options_;
};

}  // namespace packtune::tuners
