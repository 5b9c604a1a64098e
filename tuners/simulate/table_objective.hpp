#pragma once
// A recorded objective: a CSV of `trial,budget,metric` rows (an optional header line of
// exactly those names, blank lines and `#` comments allowed), where `trial` is the 0-based
// creation index of the trial and `metric` may be `nan` for a failed run. A trial trained to
// budget b reports the row with the largest budget <= b, as a learning curve recorded at
// those budgets would.
#include <istream>
#include <string>
#include <utility>
#include <vector>

#include "tuners/simulate/objective.hpp"

namespace packtune::tuners {

class TableObjective : public Objective {
 public:
  // Throws InputError naming the file (and line) when it is missing or malformed.
  static TableObjective from_file(const std::string& path);
  // `name` is used in messages in place of a file name.
  static TableObjective from_stream(std::istream& in, const std::string& name);

  double evaluate(std::int64_t index, const TrialConfig& config, double budget) override;
  std::string description() const override { return "table:" + name_; }

  std::int64_t trials() const { return static_cast<std::int64_t>(curves_.size()); }

 private:
  std::string name_;
  std::vector<std::vector<std::pair<double, double>>> curves_;  // by trial: (budget, metric)
};

}  // namespace packtune::tuners
