#include "packing/throughput_model.hpp"

#include <catch2/catch.hpp>

#include "packing/planner.hpp"

using namespace packtune::packing;

namespace {

TrialShape mlp(const std::string& key, std::int64_t flops, const std::string& fusion = "mlp-2") {
  TrialShape s;
  s.key = key;
  s.fusion = fusion;
  s.parameters = flops / 2;
  s.largest_parameter = flops / 4;
  s.activations_per_sample = 1000;
  s.flops_per_sample = flops;
  s.batch_size = 128;
  s.optimizer_slots = 1;
  return s;
}

// What an H100 showed for a fused MLP: a flat step time until the device fills, then linear.
const StepProfile kGpu{{1, 1e-3}, {2, 1e-3}, {4, 1e-3}, {8, 1.02e-3}, {16, 1.05e-3}, {32, 1.2e-3}, {64, 2.4e-3}};
// What this 2-core CPU shows: a fused pair costs more than two plain models.
const StepProfile kCpu{{1, 2e-3}, {2, 4.3e-3}};

}  // namespace

TEST_CASE("step times interpolate between measured unit sizes and extrapolate with the last slope") {
  ThroughputModel model;
  const auto s = mlp("a", 1000000);
  model.record("cuda:0", s, {{4, 3e-3}, {1, 1e-3}, {2, 2e-3}});  // any order
  CHECK(model.profiled("cuda:1", "a"));  // device kinds share profiles
  CHECK_FALSE(model.profiled("cpu", "a"));
  CHECK(model.profiled("", "a"));  // on any kind: the driver profiles a shape once
  CHECK_FALSE(model.profiled("", "b"));
  CHECK(model.step_seconds("cuda", s, 1) == Approx(1e-3));
  CHECK(model.step_seconds("cuda", s, 3) == Approx(2.5e-3));
  CHECK(model.step_seconds("cuda", s, 8) == Approx(5e-3));
  // No profile on the CPU: the prior.
  CHECK(model.step_seconds("cpu", s, 2) == Approx(model.prior_step_seconds(s, 2)));
  // One point alone says nothing about fusion: K members cost K steps.
  model.record("cpu", s, {{1, 2e-3}});
  CHECK(model.step_seconds("cpu", s, 3) == Approx(6e-3));
  CHECK_THROWS(model.record("cpu", s, {{0, 1.0}, {2, -1.0}}));
}

TEST_CASE("a shape without a profile borrows one of its architecture, scaled by its FLOPs") {
  ThroughputModel model;
  const auto wide = mlp("wide", 4000000);
  const auto narrow = mlp("narrow", 1000000);
  const auto other = mlp("other", 1000000, "cnn-3");
  model.record("cuda", wide, kGpu);
  CHECK(model.covered("cuda", narrow));
  CHECK_FALSE(model.covered("cuda", other));
  CHECK_FALSE(model.covered("cpu", narrow));
  // Four narrow members do the work of one wide member.
  CHECK(model.step_seconds("cuda", narrow, 4) == Approx(model.step_seconds("cuda", wide, 1)));
  CHECK(model.step_seconds("cuda", narrow, 64) == Approx(model.step_seconds("cuda", wide, 16)));
  CHECK(model.step_seconds("", narrow, 4) == Approx(model.step_seconds("cuda", wide, 1)));
}

TEST_CASE("a narrower shape that gained nothing from a fused pair rules fusion out for wider ones") {
  ThroughputModel model;
  const auto narrow = mlp("narrow", 1000000);
  const auto wide = mlp("wide", 4000000);
  const auto other = mlp("other", 4000000, "cnn-3");
  model.record("cpu", narrow, kCpu);
  model.record("cuda:0", narrow, kGpu);
  CHECK(model.fusion_ruled_out("cpu", wide, 0.05));
  CHECK(model.fusion_ruled_out("cpu", narrow, 0.05));
  // On the GPU the pair paid; another family, another kind or a narrower shape are not ruled out.
  CHECK_FALSE(model.fusion_ruled_out("cuda:1", wide, 0.05));
  CHECK_FALSE(model.fusion_ruled_out("cpu", other, 0.05));
  CHECK_FALSE(model.fusion_ruled_out("cpu", mlp("narrower", 500000), 0.05));
  CHECK_FALSE(model.fusion_ruled_out("mps", wide, 0.05));

  SECTION("a profile that stopped at one member says nothing") {
    ThroughputModel alone;
    alone.record("cpu", narrow, {{1, 2e-3}});
    CHECK_FALSE(alone.fusion_ruled_out("cpu", wide, 0.05));
  }
  SECTION("a gain below min_gain is no gain") {
    ThroughputModel small;
    small.record("cpu", narrow, {{1, 2e-3}, {2, 3.9e-3}});  // 2.6% more throughput
    CHECK(small.fusion_ruled_out("cpu", wide, 0.05));
    CHECK_FALSE(small.fusion_ruled_out("cpu", wide, 0.02));
  }
}

TEST_CASE("units grow to where throughput saturates on a GPU and stay at one on this CPU") {
  PlanOptions o;
  Planner planner({}, o);
  const auto s = mlp("a", 1000000);
  planner.record_profile("cuda", s, kGpu);
  planner.record_profile("cpu", s, kCpu);
  const int gpu = planner.useful_members(s, "cuda:0");
  CHECK(gpu >= 16);
  CHECK(gpu <= 64);
  CHECK(planner.useful_members(s, "cpu") == 1);

  std::vector<ActorSpec> actors{{0, "cpu", 0, 0, 8}};
  std::vector<TrialDemand> trials;
  for (int i = 0; i < 8; ++i) trials.push_back({i, s, 100});
  auto cpu_plan = planner.plan(actors, trials);
  REQUIRE(cpu_plan.actors[0].units.size() == 8);
  for (const auto& u : cpu_plan.actors[0].units) CHECK(u.solo);

  actors[0].device = "cuda:0";
  Plan gpu_plan = planner.plan(actors, {});
  for (const auto& t : trials) REQUIRE(planner.place(gpu_plan, t));
  REQUIRE(gpu_plan.actors[0].units.size() == 1);
  CHECK(gpu_plan.actors[0].units[0].members.size() == 8);
  CHECK_FALSE(gpu_plan.actors[0].units[0].solo);
  const auto* unit = Planner::unit_of(gpu_plan, 5);
  REQUIRE(unit);
  CHECK(unit->id == gpu_plan.actors[0].units[0].id);
}

TEST_CASE("a narrow trial joins a wide unit only while padding it costs less than a unit of its own") {
  Planner planner;
  const auto wide = mlp("wide", 8000000);
  const auto narrow = mlp("narrow", 1000000);
  std::vector<ActorSpec> actors{{0, "cuda:0", 0, 0, 64}};

  // The device is far from full: padding is free, the narrow trial joins.
  planner.record_profile("cuda", wide, kGpu);
  Plan plan = planner.plan(actors, {});
  REQUIRE(planner.place(plan, {0, wide, 100}));
  REQUIRE(planner.place(plan, {1, narrow, 100}));
  REQUIRE(plan.actors[0].units.size() == 1);
  CHECK(plan.actors[0].units[0].shape.key == "wide");  // trained at the widest member's shape

  // The device is nearly full at one wide member: each more wide member costs most of a
  // step, while the narrow trial alone costs an eighth of one. It gets a unit of its own.
  Planner full;
  full.record_profile("cuda", wide, {{1, 8e-3}, {2, 15e-3}, {4, 28e-3}});
  CHECK(full.useful_members(wide, "cuda") == 2);
  full.record_profile("cuda", narrow, {{1, 1e-3}, {2, 2e-3}});
  Plan p2 = full.plan(actors, {});
  REQUIRE(full.place(p2, {0, wide, 100}));
  REQUIRE(full.place(p2, {1, narrow, 100}));
  CHECK(p2.actors[0].units.size() == 2);
}

TEST_CASE("fuse never and always") {
  const auto s = mlp("a", 1000000);
  std::vector<ActorSpec> actors{{0, "cpu", 0, 0, 8}};
  std::vector<TrialDemand> trials;
  for (int i = 0; i < 4; ++i) trials.push_back({i, s, 100});
  PlanOptions o;
  o.fuse = FuseMode::Always;
  Planner always({}, o);
  always.record_profile("cpu", s, kCpu);  // fusion does not pay, but "always" fuses anyway
  CHECK(always.plan(actors, trials).actors[0].units.size() == 1);
  o.fuse = FuseMode::Never;
  Planner never({}, o);
  auto plan = never.plan(actors, trials);
  CHECK(plan.actors[0].units.size() == 4);
  for (const auto& u : plan.actors[0].units) CHECK(u.solo);
  CHECK(parse_fuse_mode("auto") == FuseMode::Auto);
  CHECK_THROWS(parse_fuse_mode("sometimes"));
}
