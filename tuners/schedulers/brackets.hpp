#pragma once
// The successive-halving schedules, as pure functions of (min budget, max budget, eta), so
// that tuners, `packtune brackets` and tests compute them in exactly one place.
//
// With R = max/min: s_max is the largest s with eta^s <= R. Hyperband (Li et al., JMLR 2018)
// runs brackets s = s_max ... 0 with B = (s_max+1)R, n = ceil(B/R * eta^s/(s+1)) configs,
// r = R eta^-s, and rung i of bracket s holding floor(n eta^-i) configs at min*r*eta^i (so
// every bracket ends at the max budget). ASHA (Li et al., MLSys 2020) with early-stopping
// rate s has rung k at min*eta^(k+s) for k + s <= s_max (so it starts at the min budget).
#include <cstdint>
#include <vector>

namespace packtune::tuners {

struct Rung {
  std::int64_t n = 0;  // configs that reach this rung
  double budget = 0;   // the total budget they are trained to
};

struct Bracket {
  int s = 0;
  std::vector<Rung> rungs;  // bottom rung first

  // Sum of n*budget over the rungs: the budget the bracket spends when every rung trains
  // its configs from scratch (resuming spends less).
  double total_budget() const;
};

// The largest s with eta^s <= max/min. Max/min is computed in floating point, so a ratio a
// hair below a power of eta (81.0 - 1e-14) still counts as that power.
int max_early_stopping_rate(double min_budget, double max_budget, std::int64_t eta);

// All Hyperband brackets, s_max first. Throws InputError for bad budgets or eta < 2.
std::vector<Bracket> hyperband_brackets(double min_budget, double max_budget, std::int64_t eta);

// Bracket s alone (0 <= s <= s_max).
Bracket hyperband_bracket(double min_budget, double max_budget, std::int64_t eta, int s);

// The same bracket started with `n` configs instead of the formula's count: rung i holds
// floor(n eta^-i), and rungs left empty are dropped. Successive halving uses bracket s_max
// this way, and Hyperband its last bracket when the trial limit cuts it short.
Bracket resize_bracket(const Bracket& bracket, std::int64_t n, std::int64_t eta);

// ASHA's rung budgets for early-stopping rate `s` (0 <= s <= s_max), bottom rung first.
std::vector<double> asha_rung_budgets(double min_budget, double max_budget, std::int64_t eta,
                                      int s);

// How many of `n` results of a rung go on: floor(n/eta).
std::int64_t promotion_quota(std::int64_t n, std::int64_t eta);

}  // namespace packtune::tuners
