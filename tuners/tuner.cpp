#include "tuners/tuner.hpp"

#include <cmath>

#include "packtune/error.hpp"

namespace packtune::tuners {

Mode parse_mode(const std::string& text) {
  if (text == "min") return Mode::Min;
  if (text == "max") return Mode::Max;
  throw InputError("mode: unknown value \"" + text + "\"; expected min or max");
}

std::string to_string(Mode mode) { return mode == Mode::Min ? "min" : "max"; }

bool better(double a, double b, Mode mode) {
  if (std::isnan(a)) return false;
  if (std::isnan(b)) return true;
  return mode == Mode::Min ? a < b : a > b;
}

double worst_value(Mode mode) {
  return mode == Mode::Min ? std::numeric_limits<double>::infinity()
                           : -std::numeric_limits<double>::infinity();
}

bool ranks_before(double metric_a, TrialId a, double metric_b, TrialId b, Mode mode) {
  if (better(metric_a, metric_b, mode)) return true;
  if (better(metric_b, metric_a, mode)) return false;
  return a < b;
}

}  // namespace packtune::tuners
