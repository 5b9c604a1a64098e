#include "tuners/schedulers/brackets.hpp"

#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "packtune/error.hpp"
#include "tuners/tuner_settings.hpp"

namespace packtune::tuners {
namespace {

// Relative slack for "is max/min a power of eta": budgets such as 0.1 and 8.1 do not divide
// exactly in binary floating point.
constexpr double kRatioSlack = 1e-9;

double power(std::int64_t eta, int exponent) {
  double p = 1;
  for (int i = 0; i < exponent; ++i) p *= static_cast<double>(eta);
  return p;
}

struct Ladder {
  int s_max = 0;
  bool exact = false;  // max/min is eta^s_max up to rounding
};

Ladder ladder(double min_budget, double max_budget, std::int64_t eta) {
  check_eta(eta);
  check_budgets(min_budget, max_budget);
  const double ratio = max_budget / min_budget;
  Ladder l;
  double p = 1;
  while (p * static_cast<double>(eta) <= ratio * (1 + kRatioSlack)) {
    p *= static_cast<double>(eta);
    ++l.s_max;
    // Beyond 2^50 configs per bracket the counts no longer fit the arithmetic below, and no
    // experiment could run them anyway.
    if (p > 0x1.0p50) {
      throw InputError("budget.max / budget.min: the ratio " + std::to_string(ratio) +
                       " is too large for eta " + std::to_string(eta) +
                       "; expected eta^s_max <= 2^50");
    }
  }
  l.exact = std::abs(ratio / p - 1) <= kRatioSlack;
  return l;
}

// A budget rounded to 12 significant digits: 0.1*3 is 0.30000000000000004 in binary floating
// point, and a schedule that prints that (or checkpoints under it) helps nobody. The error is
// far below any budget's meaning.
double clean_budget(double budget) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.12g", budget);
  return std::strtod(buffer, nullptr);
}

// Budget of level j = s_max - s + i (rung i of bracket s). The top level is exactly the max,
// and when max/min is a power of eta every level is exactly min*eta^j, so that R = 81, eta = 3
// prints 1, 3, 9, 27, 81 rather than 0.99999999999999989.
double hyperband_level_budget(const Ladder& l, double min_budget, double max_budget,
                              std::int64_t eta, int level) {
  if (level == l.s_max) return max_budget;
  if (l.exact) return clean_budget(min_budget * power(eta, level));
  return clean_budget(max_budget / power(eta, l.s_max - level));
}

}  // namespace

double Bracket::total_budget() const {
  double total = 0;
  for (const auto& r : rungs) total += static_cast<double>(r.n) * r.budget;
  return total;
}

int max_early_stopping_rate(double min_budget, double max_budget, std::int64_t eta) {
  return ladder(min_budget, max_budget, eta).s_max;
}

std::int64_t promotion_quota(std::int64_t n, std::int64_t eta) { return n / eta; }

Bracket hyperband_bracket(double min_budget, double max_budget, std::int64_t eta, int s) {
  const Ladder l = ladder(min_budget, max_budget, eta);
  if (s < 0 || s > l.s_max) {
    throw InputError("bracket s = " + std::to_string(s) + ": expected 0 <= s <= " +
                     std::to_string(l.s_max) + " for these budgets and eta");
  }
  // n = ceil((s_max+1) eta^s / (s+1)), in integers: B/R is exactly s_max+1.
  const auto eta_s = static_cast<std::int64_t>(power(eta, s));
  const std::int64_t numerator = static_cast<std::int64_t>(l.s_max + 1) * eta_s;
  const std::int64_t n = (numerator + s) / (s + 1);
  Bracket b;
  b.s = s;
  std::int64_t n_i = n;
  for (int i = 0; i <= s; ++i) {
    b.rungs.push_back({n_i, hyperband_level_budget(l, min_budget, max_budget, eta, l.s_max - s + i)});
    n_i /= eta;  // floor(n eta^-i) = floor(floor(n eta^-(i-1)) / eta) for integral eta
  }
  return b;
}

std::vector<Bracket> hyperband_brackets(double min_budget, double max_budget, std::int64_t eta) {
  const int s_max = max_early_stopping_rate(min_budget, max_budget, eta);
  std::vector<Bracket> out;
  for (int s = s_max; s >= 0; --s) out.push_back(hyperband_bracket(min_budget, max_budget, eta, s));
  return out;
}

Bracket resize_bracket(const Bracket& bracket, std::int64_t n, std::int64_t eta) {
  check_eta(eta);
  Bracket out;
  out.s = bracket.s;
  for (const auto& rung : bracket.rungs) {
    if (n <= 0) break;
    out.rungs.push_back({n, rung.budget});
    n /= eta;
  }
  return out;
}

std::vector<double> asha_rung_budgets(double min_budget, double max_budget, std::int64_t eta,
                                      int s) {
  const Ladder l = ladder(min_budget, max_budget, eta);
  if (s < 0 || s > l.s_max) {
    throw InputError("tuner.s: expected a minimum early-stopping rate from 0 to " +
                     std::to_string(l.s_max) + " (the largest s with eta^s <= max/min), got " +
                     std::to_string(s));
  }
  std::vector<double> out;
  for (int level = s; level <= l.s_max; ++level) {
    out.push_back(level == l.s_max && l.exact ? max_budget
                                              : clean_budget(min_budget * power(eta, level)));
  }
  return out;
}

}  // namespace packtune::tuners
