#pragma once
// `packtune simulate --objective exec:CMD`: an objective that another program answers, so that
// any surrogate benchmark can drive packtune's tuners in simulated time. CMD runs once, under
// /bin/sh -c, for the whole simulation; each evaluation is one JSON line to its stdin and one
// JSON line back, with the metric and optionally the cost (the protocol: docs/tuners.md). It
// lives here rather than in tuners/, which starts no processes.
//
// Whatever goes wrong with CMD (it cannot start, dies, hangs, answers nonsense) stops the
// simulation with an Error naming it: the fault is the program's, not the user's input.
#include <string>

#include "tuners/simulate/objective.hpp"
#include "util/line_process.hpp"

namespace packtune::cli {

class ExecObjective : public tuners::Objective {
 public:
  // Starts CMD; each answer must come within `timeout_seconds` (> 0) of its request. Throws
  // InputError for an empty CMD, Error when it cannot be started.
  ExecObjective(const std::string& command, double timeout_seconds);
  // Closes CMD's input and gives it `timeout_seconds` to exit; then it is killed. Returns when
  // CMD and everything it started (util::LineProcess) are killed and reaped.
  ~ExecObjective() override;

  // evaluate_from with `from` 0: the metric of the trial trained from scratch.
  double evaluate(std::int64_t index, const tuners::TrialConfig& config, double budget) override;
  tuners::Evaluation evaluate_from(std::int64_t index, const tuners::TrialConfig& config, double from,
                                   double budget) override;
  std::string description() const override { return "exec:" + command_; }

 private:
  // Stops CMD and throws the Error of one line naming it and the evaluation.
  [[noreturn]] void fail(std::int64_t index, double budget, const std::string& why);

  std::string command_;
  double timeout_seconds_;
  util::LineProcess process_;
};

}  // namespace packtune::cli
