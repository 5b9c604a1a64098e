#include "driver/parked_trials.hpp"

namespace packtune {

void ParkedTrials::assigned(TrialId trial, bool park) {
  if (park) {
    parking_.insert(trial);
  } else {
    parking_.erase(trial);
  }
}

void ParkedTrials::ended(TrialId trial, std::optional<int> actor) {
  parking_.erase(trial);
  if (actor) parked_[trial] = *actor;
}

std::optional<int> ParkedTrials::actor_of(TrialId trial) const {
  const auto it = parked_.find(trial);
  if (it == parked_.end()) return std::nullopt;
  return it->second;
}

}  // namespace packtune
