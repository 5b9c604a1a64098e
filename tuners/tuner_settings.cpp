#include "tuners/tuner_settings.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "packtune/error.hpp"

namespace packtune::tuners {

TunerSettings::TunerSettings(const nlohmann::json& settings, std::string tuner)
    : settings_(settings.is_null() ? nlohmann::json::object() : settings),
      tuner_(std::move(tuner)) {
  if (!settings_.is_object()) {
    throw InputError("tuner: expected an object of settings for the " + tuner_ + " tuner, got " +
                     std::string(settings_.type_name()));
  }
}

bool TunerSettings::has(const std::string& key) const { return settings_.contains(key); }

double TunerSettings::number(const std::string& key, double fallback, double minimum) {
  known_.insert(key);
  if (!has(key)) return fallback;
  const auto& v = settings_.at(key);
  const double d = v.is_number() ? v.get<double>() : std::nan("");
  if (!std::isfinite(d) || d < minimum) {
    throw InputError("tuner." + key + ": expected a number >= " + number_text(minimum) +
                     " for the " + tuner_ + " tuner, got " + v.dump());
  }
  return d;
}

bool TunerSettings::boolean(const std::string& key, bool fallback) {
  known_.insert(key);
  if (!has(key)) return fallback;
  const auto& v = settings_.at(key);
  if (!v.is_boolean()) {
    throw InputError("tuner." + key + ": expected true or false for the " + tuner_ + " tuner, got " + v.dump());
  }
  return v.get<bool>();
}

std::string TunerSettings::choice(const std::string& key, const std::string& fallback,
                                  const std::vector<std::string>& options) {
  known_.insert(key);
  if (!has(key)) return fallback;
  const auto& v = settings_.at(key);
  if (v.is_string() && std::find(options.begin(), options.end(), v.get<std::string>()) != options.end()) {
    return v.get<std::string>();
  }
  std::string list;
  for (const auto& o : options) list += (list.empty() ? "" : ", ") + o;
  throw InputError("tuner." + key + ": expected one of " + list + " for the " + tuner_ + " tuner, got " + v.dump());
}

std::int64_t TunerSettings::integer(const std::string& key, std::int64_t fallback,
                                    std::int64_t minimum, std::int64_t maximum) {
  known_.insert(key);
  if (!has(key)) return fallback;
  const auto& v = settings_.at(key);
  // 3.0 is accepted as 3: JSON writers disagree on how to print whole numbers.
  const bool whole = v.is_number_integer() ||
                     (v.is_number_float() && std::isfinite(v.get<double>()) &&
                      v.get<double>() == std::floor(v.get<double>()) &&
                      std::abs(v.get<double>()) < 9e15);
  if (!whole || v.get<double>() < static_cast<double>(minimum) ||
      v.get<double>() > static_cast<double>(maximum)) {
    throw InputError("tuner." + key + ": expected an integer from " + std::to_string(minimum) +
                     " to " + std::to_string(maximum) + " for the " + tuner_ + " tuner, got " +
                     v.dump());
  }
  return static_cast<std::int64_t>(v.get<double>());
}

std::vector<double> TunerSettings::numbers(const std::string& key, const std::vector<double>& fallback,
                                           double exclusive_minimum) {
  known_.insert(key);
  if (!has(key)) return fallback;
  const auto& v = settings_.at(key);
  std::vector<double> out;
  if (v.is_array()) {
    for (const auto& item : v) {
      if (!item.is_number() || !std::isfinite(item.get<double>()) || !(item.get<double>() > exclusive_minimum)) break;
      out.push_back(item.get<double>());
    }
  }
  if (out.empty() || out.size() != v.size()) {
    throw InputError("tuner." + key + ": expected a list of numbers > " + number_text(exclusive_minimum) + " for the " +
                     tuner_ + " tuner, got " + v.dump());
  }
  return out;
}

std::vector<std::string> TunerSettings::strings(const std::string& key, const std::vector<std::string>& fallback) {
  known_.insert(key);
  if (!has(key)) return fallback;
  const auto& v = settings_.at(key);
  std::vector<std::string> out;
  if (v.is_array()) {
    for (const auto& item : v) {
      if (!item.is_string() || std::find(out.begin(), out.end(), item.get<std::string>()) != out.end()) break;
      out.push_back(item.get<std::string>());
    }
  }
  if (out.empty() || out.size() != v.size()) {
    throw InputError("tuner." + key + ": expected a list of distinct names for the " + tuner_ + " tuner, got " + v.dump());
  }
  return out;
}

std::int64_t TunerSettings::eta() {
  try {
    return integer("eta", 3, 2, 1000000);
  } catch (const InputError&) {
    throw InputError("tuner.eta (--eta): expected an integer >= 2 for the " + tuner_ +
                     " tuner, got " + settings_.at("eta").dump());
  }
}

void TunerSettings::finish() const {
  for (const auto& [key, _] : settings_.items()) {
    if (known_.count(key) == 0) {
      std::string known;
      for (const auto& k : known_) known += (known.empty() ? "" : ", ") + k;
      throw InputError("tuner." + key + ": unknown key for the " + tuner_ + " tuner; " +
                       (known.empty() ? std::string("it takes only name and trials")
                                      : "expected one of name, trials, " + known));
    }
  }
}

std::string number_text(double value) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.12g", value);
  return buffer;
}

void check_eta(std::int64_t eta) {
  if (eta < 2) {
    throw InputError("tuner.eta (--eta): expected an integer >= 2, got " + std::to_string(eta));
  }
}

void check_budgets(double min_budget, double max_budget) {
  const auto check = [](double v, const char* field, const char* flag) {
    if (!std::isfinite(v) || v <= 0) {
      throw InputError(std::string(field) + " (" + flag + "): expected a positive number, got " +
                       number_text(v));
    }
  };
  // The max first: when only the max is given, the min defaults to it.
  check(max_budget, "budget.max", "--max-budget");
  check(min_budget, "budget.min", "--min-budget");
  if (min_budget > max_budget) {
    throw InputError("budget.min (--min-budget): " + number_text(min_budget) +
                     " is above budget.max " + number_text(max_budget) +
                     "; expected min <= max");
  }
}

namespace {

// The shortest text that reads back as `value` itself: a floor rounded to 12 digits could fall
// below the floor, and "use at least" would name a value that is refused again.
std::string floor_text(double value) {
  char buffer[32];
  for (int digits = 12; digits <= 17; ++digits) {
    std::snprintf(buffer, sizeof buffer, "%.*g", digits, value);
    if (std::strtod(buffer, nullptr) == value) break;
  }
  return buffer;
}

}  // namespace

void check_budget_setting(const TunerContext& context, const std::string& name, double value) {
  if (!std::isfinite(value) || value <= 0) {
    throw InputError(name + ": expected a budget > 0, got " + number_text(value));
  }
  const std::string unit = context.budget_unit.empty() ? "" : " " + context.budget_unit;
  if (value < context.step_budget) {
    const std::string note = context.step_note.empty() ? "" : " (" + context.step_note + ")";
    throw InputError(name + ": " + number_text(value) + unit + " is less than a step" + note +
                     ", the least a job trains; use at least " + floor_text(context.step_budget));
  }
  const double least = context.max_budget / kMaxReportsPerTrial;
  if (value < least) {
    throw InputError(name + ": " + number_text(value) + unit + " divides budget.max " +
                     number_text(context.max_budget) + " into more than " + number_text(kMaxReportsPerTrial) +
                     " parts, more reports than a trial may make; use at least " + floor_text(least));
  }
}

void check_trials(const TunerContext& context, bool zero_allowed) {
  const std::int64_t lowest = zero_allowed ? 0 : 1;
  if (context.max_trials < lowest) {
    throw InputError("tuner.trials (--trials): expected at least " + std::to_string(lowest) +
                     (zero_allowed ? " (0: the algorithm's own count)" : "") + ", got " +
                     std::to_string(context.max_trials));
  }
}

}  // namespace packtune::tuners
