#pragma once
// What the driver takes from a peer, beyond its registration (Hello): the rules a registered
// actor's reports, test answers and checkpoint offers must meet, the secret that names an
// actor's transfer socket, and the log of refusals, bounded so that a flood of refused
// messages cannot fill the driver's log. Pure rules and a counter: DriverCore applies them
// (docs/security.md, After registration).
#include <chrono>
#include <cstdint>
#include <map>
#include <string>

#include "protocol/protocol.hpp"

namespace packtune {

class Admission {
 public:
  using Clock = std::chrono::steady_clock;

  // Metric names actors report (fused_group.cpp) and test (Tested).
  static constexpr std::size_t kMaxMetricName = 64;

  // Why a report's (or, `test`, a Tested's) metrics are refused, or "": only the metrics the
  // model families report, each a finite number or NaN (a diverged loss). Any other name
  // could overwrite a field of results.jsonl (trial, budget).
  static std::string metrics_refusal(const std::map<std::string, double>& metrics, bool test);

  // The bounds of a checkpoint an actor may write for the job it holds: its budget in the
  // file's name lies in (0, top], top being the job's budget or, for a promotion to a budget
  // the trial had reached, its checkpoint's; without checkpoints inside jobs, at `top` or the
  // job's budget only. Names carry six significant digits (checkpoint_path's %g).
  struct Held {
    tuners::TrialId trial = -1;
    double job_budget = 0;
    double resume_budget = 0;
  };
  static std::string offer_refusal(const protocol::Offer& offer, const Held& held, bool inside_jobs);
  // Why a report's budget is not one the job it holds may report at, or "".
  static std::string budget_refusal(double budget, const Held& held);

  // At most 160 printable characters of a peer's string, for a log line.
  static std::string printable(const std::string& text);

  // Logs a refusal: at most kLogsPerMinute lines a minute, then one line with the count of
  // those not logged.
  void refused(const std::string& what, Clock::time_point now);
  std::int64_t refusals() const { return refusals_; }

 private:
  static constexpr int kLogsPerMinute = 10;
  std::int64_t refusals_ = 0;
  Clock::time_point window_start_{};
  int logged_ = 0;
  std::int64_t unlogged_ = 0;
};

}  // namespace packtune
