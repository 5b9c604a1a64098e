#include "driver/final_test.hpp"

#include <utility>

namespace packtune {

std::optional<int> FinalTest::ask_next(const ActorRegistry& registry, tuners::TrialId trial) {
  for (const auto& [identity, actor] : registry.actors()) {
    if (actor.dead || !actor.ready || !asked_.insert(actor.id).second) continue;
    testing_ = Testing{trial, actor.id, std::nullopt};
    return actor.id;
  }
  return std::nullopt;
}

bool FinalTest::lost(const ActorRegistry& registry) const {
  if (!testing_) return true;
  const auto* actor = registry.actor_by_id(testing_->actor);
  return !actor || actor->dead;
}

protocol::Tested FinalTest::take_answer() {
  auto answer = std::move(*testing_->answer);
  testing_.reset();
  return answer;
}

}  // namespace packtune
