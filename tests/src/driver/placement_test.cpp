#include <catch2/catch.hpp>

#include "driver/actor_registry.hpp"
#include "driver/placement.hpp"
#include "experiment/experiment_config.hpp"
#include "mlp_shape.hpp"

using namespace packtune;
using packtune::testing::mlp_shape;

namespace {

constexpr std::int64_t GiB = std::int64_t{1} << 30;

ExperimentConfig config_of(int max_pack, const std::string& fuse) {
  const nlohmann::json json = {
      {"name", "placement"},
      {"budget", {{"unit", "steps"}, {"min", 1}, {"max", 4}}},
      {"tuner", {{"name", "random"}, {"trials", 4}}},
      {"actors", 0},
      {"max_pack", max_pack},
      {"fuse", fuse},
      {"model", {{"family", "mlp"}, {"depth", 1}, {"width", 32}, {"batch_size", 16}, {"optimizer", "sgd"}}},
      {"space", {{"lr", {{"type", "loguniform"}, {"low", 1e-4}, {"high", 1e-1}}}}}};
  return parse_config(json, "placement.json");
}

// Placement over `actors` ready CPU actors of 8 GiB each.
struct Fixture {
  ExperimentConfig config;
  ActorRegistry registry{{60, 60, 30}};
  Placement placement;
  std::vector<int> ids;

  Fixture(int actors, int max_pack, const std::string& fuse) : config(config_of(max_pack, fuse)), placement(config) {
    const auto t0 = ActorRegistry::Clock::time_point{};
    for (int i = 0; i < actors; ++i) {
      protocol::Hello hello;
      hello.host = "h";
      hello.pid = 100 + i;
      auto& actor = registry.add_actor("a" + std::to_string(i), hello, t0);
      registry.mark_ready(actor, protocol::Ready{"cpu", 8 * GiB, true, 0});
      ids.push_back(actor.id);
    }
    placement.actors_changed();
    placement.catch_up(registry);
  }

  // Places and starts a job of `trial`; the actor it went to.
  int start(tuners::TrialId trial, const packing::TrialShape& shape, bool park = false) {
    const auto actor = placement.place({trial, shape, 10}, nullptr);
    REQUIRE(actor);
    placement.start(*actor, trial, park);
    return *actor;
  }
};

}  // namespace

TEST_CASE("placement: jobs take the free member slots of the live actors, and a job that ends gives its slot back") {
  Fixture f(2, 1, "never");
  REQUIRE(f.placement.plan().actors.size() == 2);
  CHECK(f.placement.free_slots() == 2);
  f.placement.begin_pass();
  const int first = f.start(1, mlp_shape(32));
  const int second = f.start(2, mlp_shape(32));
  CHECK(first != second);  // max_pack 1: one trial an actor
  CHECK(f.placement.free_slots() == 0);
  packing::Unplaced why;
  CHECK_FALSE(f.placement.place({3, mlp_shape(32), 10}, &why));
  CHECK(why.waits);
  CHECK(f.placement.end_pass().empty());

  f.placement.ended(1, std::nullopt);
  CHECK(packing::Planner::unit_of(f.placement.plan(), 1) == nullptr);
  CHECK(f.placement.free_slots() == 1);
  CHECK(f.start(3, mlp_shape(32)) == first);
}

TEST_CASE("placement: a parked trial keeps its place for its next job of the same shape, and leaves it otherwise") {
  Fixture f(1, 1, "never");
  const int actor = f.start(1, mlp_shape(32), true);
  CHECK(f.placement.parks(1));
  f.placement.ended(1, actor);
  CHECK(f.placement.parked().actor_of(1) == std::optional<int>(actor));
  CHECK(f.placement.free_slots() == 1);  // its place, which its next job takes

  SECTION("its next job goes on in place") {
    const auto unparked = f.placement.unpark(1, mlp_shape(32).key, true);
    CHECK(unparked.in_place == std::optional<int>(actor));
    CHECK_FALSE(unparked.released);
    CHECK(f.placement.parked().empty());
    CHECK(packing::Planner::unit_of(f.placement.plan(), 1) != nullptr);
  }
  SECTION("an exploit of another shape is placed anew, and its actor is told") {
    const auto unparked = f.placement.unpark(1, mlp_shape(64).key, true);
    CHECK_FALSE(unparked.in_place);
    CHECK(unparked.released == std::optional<int>(actor));
    CHECK(packing::Planner::unit_of(f.placement.plan(), 1) == nullptr);
  }
  SECTION("its actor is gone: placed anew, and nobody is told") {
    const auto unparked = f.placement.unpark(1, mlp_shape(32).key, false);
    CHECK_FALSE(unparked.in_place);
    CHECK_FALSE(unparked.released);
    CHECK(packing::Planner::unit_of(f.placement.plan(), 1) == nullptr);
  }
  SECTION("with no job of its own queued it leaves to make room") {
    CHECK(f.placement.release_unqueued({1}).empty());
    const auto released = f.placement.release_unqueued({2});
    CHECK(released == Placement::Released{{1, actor}});
    CHECK(f.placement.parked().empty());
    CHECK(f.placement.free_slots() == 1);
    CHECK(f.start(2, mlp_shape(32)) == actor);
  }
}

TEST_CASE("placement: a parked trial whose fused unit was given another member's job in a pass leaves the unit") {
  Fixture f(1, 2, "always");
  const int actor = f.start(1, mlp_shape(32), true);
  f.start(2, mlp_shape(32), true);
  REQUIRE(packing::Planner::unit_of(f.placement.plan(), 1) == packing::Planner::unit_of(f.placement.plan(), 2));
  f.placement.ended(1, actor);
  f.placement.ended(2, actor);

  f.placement.begin_pass();
  REQUIRE(f.placement.unpark(2, mlp_shape(32).key, true).in_place == std::optional<int>(actor));
  f.placement.start(actor, 2, true);
  // Trial 1's unit steps only once none of its members is parked: trial 1 leaves it.
  CHECK(f.placement.end_pass() == Placement::Released{{1, actor}});
  CHECK(f.placement.parked().empty());
  CHECK(packing::Planner::unit_of(f.placement.plan(), 1) == nullptr);
  // A pass that gave the unit no job keeps its parked trials.
  f.placement.ended(2, actor);
  f.placement.begin_pass();
  CHECK(f.placement.end_pass().empty());
  CHECK(f.placement.parked().actor_of(2) == std::optional<int>(actor));
}

TEST_CASE("placement: a unit that ran out of memory leaves the plan and its shape's figure doubles") {
  Fixture f(1, 2, "never");
  const auto shape = mlp_shape(32);
  f.start(1, shape);
  const auto before = f.placement.planner().memory_model().estimate(shape, 1).peak();
  f.placement.out_of_memory(shape.key, {1});
  CHECK(packing::Planner::unit_of(f.placement.plan(), 1) == nullptr);
  CHECK(f.placement.planner().memory_model().estimate(shape, 1).peak() > before);
}
