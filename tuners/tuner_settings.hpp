#pragma once
// Reads a tuner's own keys from TunerContext::settings (the config's "tuner" object without
// the common keys) and checks the context's common fields. Every key a tuner does not read
// is an error, because a misspelt "eta" silently falling back to its default would change
// the schedule without anyone noticing.
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tuners/tuner.hpp"

namespace packtune::tuners {

class TunerSettings {
 public:
  // `tuner` is the tuner's name, used in messages.
  TunerSettings(const nlohmann::json& settings, std::string tuner);

  bool has(const std::string& key) const;
  // A number >= `minimum`, or `fallback` when the key is absent.
  double number(const std::string& key, double fallback, double minimum);
  // An integer in [minimum, maximum], or `fallback` when the key is absent.
  std::int64_t integer(const std::string& key, std::int64_t fallback, std::int64_t minimum,
                       std::int64_t maximum);
  // true or false, or `fallback` when the key is absent.
  bool boolean(const std::string& key, bool fallback);
  // One of `options`, or `fallback` when the key is absent.
  std::string choice(const std::string& key, const std::string& fallback, const std::vector<std::string>& options);
  // A list of numbers, each > `exclusive_minimum` (at least one), or `fallback` when absent.
  std::vector<double> numbers(const std::string& key, const std::vector<double>& fallback, double exclusive_minimum);
  // A list of distinct strings (at least one), or `fallback` when absent.
  std::vector<std::string> strings(const std::string& key, const std::vector<std::string>& fallback);
  // Reduction factor shared by every successive-halving tuner: an integer >= 2, default 3.
  // Integral so that floor(n/eta) per rung and the paper's floor(n*eta^-i) agree exactly.
  std::int64_t eta();

  // Throws InputError for the first key the tuner never asked for.
  void finish() const;

 private:
  nlohmann::json settings_;
  std::string tuner_;
  std::set<std::string> known_;  // every key the tuner asked for, present or not
};

// A number as a user wrote it: 5 rather than 5.0, 0.3 rather than 0.30000000000000004.
std::string number_text(double value);

// budget.min and budget.max must be finite, positive and ordered.
void check_budgets(double min_budget, double max_budget);
// The most reports one trial may make up to budget.max: the limit budget.report_every has
// (config_keys.hpp kMaxReports), which a budget setting that ends a job (pbt's interval) has too.
inline constexpr double kMaxReportsPerTrial = 100000;
// A budget setting that ends a job or a report every so often (pbt's interval, simulate's
// --report-every): finite and > 0; at least a step where the context knows what a step is
// (context.step_budget), since a job trains at least one and a generation below it would end
// at a budget no job trains to; and at most kMaxReportsPerTrial of it up to budget.max, since
// a sliver of it is a schedule that never ends.
void check_budget_setting(const TunerContext& context, const std::string& name, double value);
// eta must be at least 2.
void check_eta(std::int64_t eta);
// The trial limit: at least 1, or also 0 ("the algorithm's own count") when `zero_allowed`.
void check_trials(const TunerContext& context, bool zero_allowed);

}  // namespace packtune::tuners
