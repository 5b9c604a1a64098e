#include "driver/final_models.hpp"

#include <algorithm>

namespace packtune {

std::optional<tuners::TrialId> FinalModels::finished(tuners::TrialId trial, double metric) {
  const auto ranks = [this](const auto& a, const auto& b) {
    return tuners::ranks_before(a.first, a.second, b.first, b.second, mode_);
  };
  const std::pair<double, tuners::TrialId> entry{metric, trial};
  best_.insert(std::upper_bound(best_.begin(), best_.end(), entry, ranks), entry);
  if (best_.size() <= keep_) return std::nullopt;
  const auto out = best_.back().second;
  best_.pop_back();
  return out;
}

std::vector<tuners::TrialId> FinalModels::kept() const {
  std::vector<tuners::TrialId> trials;
  for (const auto& [metric, trial] : best_) trials.push_back(trial);
  return trials;
}

}  // namespace packtune
