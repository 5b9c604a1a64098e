#pragma once
// Which report is a run's best: one rule for the driver (ResultsWriter: best.json, the
// summary, the test of the best trial's final model) and for report.html's page of a run that
// has no best.json yet. Header-only: the report library links nothing of the driver's.
#include <string>

namespace packtune {

// The budget whose reports outrank every report below it: pbt's max_budget, where its final
// population ends (a member's earlier reports may be of weights an exploit replaced since);
// 0, none, for every other tuner.
inline double best_budget(const std::string& tuner, double max_budget) { return tuner == "pbt" ? max_budget : 0.0; }

// Whether a report (value, budget) takes the place of the best so far (best_value, reported at
// best_at): a better value, or the same at a higher budget; a report at `final_budget` (> 0)
// outranks every one below it.
inline bool outranks_best(double value, double budget, double best_value, double best_at, bool maximize,
                          double final_budget) {
  const auto at_final = [final_budget](double b) { return final_budget > 0 && b >= final_budget * (1 - 1e-9); };
  if (at_final(budget) != at_final(best_at)) return at_final(budget);
  return (maximize ? value > best_value : value < best_value) || (value == best_value && budget > best_at);
}

}  // namespace packtune
