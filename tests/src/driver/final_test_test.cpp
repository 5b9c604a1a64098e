#include <catch2/catch.hpp>

#include "driver/final_test.hpp"

using namespace packtune;

namespace {

ActorState& ready_actor(ActorRegistry& registry, const std::string& identity, int local_index) {
  protocol::Hello hello;
  hello.host = "box";
  hello.node_id = 0;
  hello.local_index = local_index;
  hello.pid = 100 + local_index;
  auto& actor = registry.add_actor(identity, hello, ActorRegistry::Clock::time_point{});
  registry.mark_ready(actor, protocol::Ready{"cpu", std::int64_t{1} << 30, true, 0});
  return actor;
}

protocol::Tested answer(tuners::TrialId trial, double accuracy) {
  protocol::Tested t;
  t.trial = trial;
  t.budget = 9;
  t.metrics = {{"test_accuracy", accuracy}};
  return t;
}

}  // namespace

TEST_CASE("the final test asks one ready actor at a time, counts only its answer, and moves on when it dies") {
  ActorRegistry registry({60, 60});
  auto& a = ready_actor(registry, "a", 0);
  auto& b = ready_actor(registry, "b", 1);
  auto& unready = registry.add_actor("c", protocol::Hello{}, ActorRegistry::Clock::time_point{});
  FinalTest test;
  CHECK(test.lost(registry));  // nobody asked yet
  const auto first = test.ask_next(registry, 7);
  REQUIRE(first);
  CHECK(test.tests(*first, 7));
  CHECK_FALSE(test.tests(*first, 8));  // another trial's checkpoints are not the test's
  const int other = *first == a.id ? b.id : a.id;
  CHECK_FALSE(test.tests(other, 7));
  CHECK_FALSE(test.tests(unready.id, 7));
  CHECK_FALSE(test.answered());
  CHECK_FALSE(test.lost(registry));

  // The asked actor dies before it answers: the next one is asked, never the first again.
  registry.mark_dead(*registry.actor_by_id(*first));
  CHECK(test.lost(registry));
  const auto second = test.ask_next(registry, 7);
  REQUIRE(second);
  CHECK(*second == other);
  CHECK_FALSE(test.tests(*first, 7));
  test.answer(answer(7, 0.93));
  CHECK(test.answered());
  const auto got = test.take_answer();
  CHECK(got.metrics.at("test_accuracy") == 0.93);
  CHECK_FALSE(test.answered());
  CHECK_FALSE(test.tests(*second, 7));  // the test is over

  // Every ready actor was asked: none is left (the unready one never is).
  CHECK_FALSE(test.ask_next(registry, 7));
}

TEST_CASE("a final test given up holds no tester") {
  ActorRegistry registry({60, 60});
  ready_actor(registry, "a", 0);
  FinalTest test;
  const auto tester = test.ask_next(registry, 3);
  REQUIRE(tester);
  test.give_up();
  CHECK_FALSE(test.tests(*tester, 3));
  CHECK(test.lost(registry));
}
