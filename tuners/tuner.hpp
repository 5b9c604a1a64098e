#pragma once
// The Tuner interface, in the pull style of the ASHA paper: whenever an actor has room the
// driver asks for the next job, and it tells the tuner every result. A tuner is pure logic:
// it never trains, never talks to the network, and can be simulated in microseconds.
//
// Budgets are numbers in the experiment's unit (epochs by default) and may be fractional.
// A job's `budget` is the total budget the trial should reach, not an increment.
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tuners/search_space.hpp"
#include "tuners/trial_config.hpp"

namespace packtune::tuners {

enum class Mode { Min, Max };
Mode parse_mode(const std::string& text);  // "min" | "max", else InputError
std::string to_string(Mode mode);

// True when metric `a` is strictly better than `b` under `mode`. NaN is worse than anything,
// so a diverged trial never wins.
bool better(double a, double b, Mode mode);
// The worst possible value under `mode`, for trials that failed.
double worst_value(Mode mode);
// The order every tuner ranks results in: better metric first, NaN last, and ties broken by
// the lower trial id so that a schedule never depends on the order results arrived in.
bool ranks_before(double metric_a, TrialId a, double metric_b, TrialId b, Mode mode);

struct Job {
  enum class Kind {
    Start,     // a new trial: `trial`, `config`, `budget`
    Resume,    // a paused trial continues up to `budget` (a promotion)
    Wait,      // nothing to do until a result arrives
    Finished,  // the experiment is over
  };
  Kind kind = Kind::Wait;
  TrialId trial = -1;
  TrialConfig config;
  double budget = 0;
  // Start only: why the sampler chose `config` (null: drawn at random); run reports show it.
  nlohmann::json why;
  // Resume only, population-based training's exploit: the trial goes on from `from_trial`'s
  // checkpoint at `from_budget` (its weights and optimizer state) with `config`, instead of
  // from its own. -1: from its own checkpoint, with its own config.
  TrialId from_trial = -1;
  double from_budget = 0;

  static Job start(TrialId id, TrialConfig config, double budget, nlohmann::json why = nullptr) {
    return {Kind::Start, id, std::move(config), budget, std::move(why)};
  }
  static Job resume(TrialId id, TrialConfig config, double budget) {
    return {Kind::Resume, id, std::move(config), budget};
  }
  static Job exploit(TrialId id, TrialConfig config, double budget, TrialId from_trial, double from_budget) {
    Job job{Kind::Resume, id, std::move(config), budget, nullptr};
    job.from_trial = from_trial;
    job.from_budget = from_budget;
    return job;
  }
  static Job wait() { return {}; }
  static Job finished() { return {Kind::Finished, -1, {}, 0}; }
};

enum class Decision { Continue, Stop };

// Everything a tuner is built from. `settings` holds the tuner's own keys of the config's
// "tuner" object (for example "eta"), already free of the common ones below.
struct TunerContext {
  SearchSpace space;
  std::string metric = "val_accuracy";
  Mode mode = Mode::Max;
  double min_budget = 1;
  double max_budget = 1;
  std::int64_t max_trials = 1;  // trial limit; 0 means "as many as the algorithm wants"
  std::uint64_t seed = 0;
  nlohmann::json settings = nlohmann::json::object();
  // The budgets' unit ("epochs" or "steps"; empty where unknown), for messages.
  std::string budget_unit;
  // The budget of one training step where the caller knows it, else 0: 1 in steps; in epochs
  // one step of the epoch that makes the fewest (the largest batch), known from the data. A
  // job trains at least a step, so a tuner's budget setting below it (pbt's interval) asks for
  // budgets no job trains to (check_budget_setting refuses it).
  double step_budget = 0;
  // Why a step is step_budget, for messages ("16 steps an epoch with batch_size 64 on 1024
  // examples"); may be empty.
  std::string step_note;
};

// The version of the interface plugins compile against: Tuner's virtual functions and
// TunerContext's layout. A plugin built against another version would call through a
// different vtable, so the registry refuses it (PACKTUNE_REGISTER_TUNER records the version
// the plugin was built with). Raise it whenever either changes.
//   2: Tuner::planned_budget and Tuner::warnings (2026-11-24)
//   3: Job::why (2026-11-26)
//   4: Job::from_trial and from_budget (2026-11-26)
//   5: TunerContext::budget_unit, step_budget and step_note (2026-11-28)
inline constexpr int kTunerInterfaceVersion = 5;

class Tuner {
 public:
  virtual ~Tuner() = default;

  // The next job for a free slot. Called repeatedly while capacity remains; a tuner returns
  // Wait when it needs results first and Finished once every trial is done.
  virtual Job next_job() = 0;

  // A job finished: `trial` reached `budget` with `metric` (NaN for a failed or diverged
  // trial). Every Start/Resume job gets exactly one result.
  virtual void on_result(TrialId trial, double budget, double metric) = 0;

  // An intermediate report while a job runs. Returning Stop ends the trial early; the
  // driver then delivers the last report as the job's result.
  virtual Decision on_report(TrialId /*trial*/, double /*budget*/, double /*metric*/) {
    return Decision::Continue;
  }

  virtual std::string name() const = 0;

  // The budget the whole schedule trains, counting what each job adds to its trial (a
  // promotion resumes from the trial's checkpoint), when the tuner knows it in advance;
  // nullopt otherwise (ASHA's promotions depend on results). The driver's status display
  // estimates the time left from it.
  virtual std::optional<double> planned_budget() const { return std::nullopt; }

  // What the user should know about the schedule the settings make, one sentence each (a
  // trial limit that cuts a Hyperband bracket short); `packtune run` and `simulate` print them.
  virtual std::vector<std::string> warnings() const { return {}; }
};

}  // namespace packtune::tuners
