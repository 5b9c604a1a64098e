#pragma once
// The test of the best trial's final model on the test split, once the tuner is done
// (docs/checkpoints.md, Final models): which actor is asked, whose answer counts, and who may
// fetch the trial's checkpoints for it. One ready actor at a time; one that dies or hangs
// before it answers gives way to the next not asked yet. No sockets: DriverCore sends the
// Test and hands over the answers.
#include <optional>
#include <set>

#include "driver/actor_registry.hpp"
#include "protocol/protocol.hpp"
#include "tuners/tuner.hpp"

namespace packtune {

class FinalTest {
 public:
  // The next live, ready actor not asked yet, now asked to test `trial`; nullopt when none
  // is left.
  std::optional<int> ask_next(const ActorRegistry& registry, tuners::TrialId trial);
  // Whether `actor` is the one asked, and `trial` the trial it tests: only its answer counts,
  // and only it may fetch the trial's checkpoints besides the trial's own actor.
  bool tests(int actor, tuners::TrialId trial) const {
    return testing_ && testing_->actor == actor && testing_->trial == trial;
  }
  // The asked actor's answer (tests() holds for it).
  void answer(protocol::Tested answer) { testing_->answer = std::move(answer); }
  bool answered() const { return testing_ && testing_->answer.has_value(); }
  // The asked actor is gone (or none was asked).
  bool lost(const ActorRegistry& registry) const;
  // The answer; the test is over.
  protocol::Tested take_answer();
  // No answer will come: the test is over.
  void give_up() { testing_.reset(); }

 private:
  struct Testing {
    tuners::TrialId trial = -1;
    int actor = -1;
    std::optional<protocol::Tested> answer;
  };
  std::optional<Testing> testing_;  // while the test runs
  std::set<int> asked_;             // actors asked, who died or hung but the last
};

}  // namespace packtune
