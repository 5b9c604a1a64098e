#include "packing/planner.hpp"

#include <algorithm>
#include <functional>
#include <random>
#include <set>

#include <catch2/catch.hpp>

using namespace packtune::packing;

namespace {

constexpr std::int64_t MiB = 1 << 20;

TrialShape mlp_shape(const std::string& key = "mlp", int batch = 128) {
  TrialShape s;
  s.key = key;
  s.parameters = 269322;
  s.largest_parameter = 784 * 256;
  s.activations_per_sample = 2852;
  s.flops_per_sample = 2 * (784 * 256 + 256 * 256 + 2560);
  s.batch_size = batch;
  s.optimizer_slots = 1;
  return s;
}

std::vector<TrialDemand> demands(int n, const TrialShape& shape, std::int64_t first = 0) {
  std::vector<TrialDemand> out;
  for (int i = 0; i < n; ++i) out.push_back({first + i, shape, 100});
  return out;
}

void check_capacity(const Plan& plan, const Planner& planner) {
  for (const auto& a : plan.actors) {
    if (a.actor.capacity_bytes > 0) CHECK(a.estimated_bytes <= a.actor.capacity_bytes);
    CHECK(a.members() <= a.actor.max_members);
    CHECK(static_cast<int>(a.units.size()) <= a.actor.max_units);
    for (const auto& u : a.units) {
      CHECK(u.estimate.peak() == planner.memory_model().estimate(u.members.front().shape, static_cast<int>(u.members.size())).peak());
    }
  }
}

std::set<std::int64_t> placed_ids(const Plan& plan) {
  std::set<std::int64_t> ids;
  for (const auto& a : plan.actors)
    for (const auto& u : a.units)
      for (const auto& m : u.members) ids.insert(m.trial);
  return ids;
}

}  // namespace

TEST_CASE("the memory model: persistent state per member, the largest transient") {
  auto s = mlp_shape();
  const auto solo = formula_estimate(s, 1);
  CHECK(solo.persistent == 269322LL * 3 * 4);
  // Backward keeps the activations of one batch; the step needs one temporary weight.
  CHECK(solo.transient == static_cast<std::int64_t>(std::max(0.9 * 2852 * 128 * 4, 784.0 * 256 * 4)));
  const auto fused = formula_estimate(s, 4);
  CHECK(fused.persistent == 4 * solo.persistent);
  CHECK(fused.transient > 4 * solo.transient);  // the whole-tensor optimizer keeps more
  s.optimizer_slots = 2;
  s.adaptive = true;
  CHECK(formula_estimate(s, 1).peak() > solo.peak());
}

TEST_CASE("where members read batches of their own, each member's batch is persistent memory") {
  auto s = mlp_shape();
  const auto shared_solo = formula_estimate(s, 1);
  const auto shared_fused = formula_estimate(s, 4);
  s.own_batch_values = 128 * 784;
  const auto solo = formula_estimate(s, 1);
  const auto fused = formula_estimate(s, 4);
  CHECK(solo.persistent == shared_solo.persistent + 128 * 784 * 4);
  CHECK(fused.persistent == shared_fused.persistent + 4 * 128 * 784 * 4);
  CHECK(solo.transient == shared_solo.transient);
  CHECK(fused.transient == shared_fused.transient);
}

TEST_CASE("measurements and out-of-memory corrections move one shape's figure") {
  MemoryModel model;
  auto s = mlp_shape();
  auto other = mlp_shape("other");
  const auto before = model.solo_bytes(s);
  model.record_measurement(s, 1, before * 2);
  CHECK(model.solo_bytes(s) >= 2 * before - 8);
  CHECK(model.solo_bytes(other) == before);
  model.record_measurement(s, 1, before / 2);  // never below what was seen
  CHECK(model.solo_bytes(s) >= 2 * before - 8);
  model.correct_upward("other", 1.5);
  CHECK(model.solo_bytes(other) >= before * 3 / 2);
}

TEST_CASE("fused units grow while one more member still pays") {
  PlanOptions o;
  o.step_overhead_seconds = 1e-3;
  o.device_flops = 5e10;
  Planner planner({}, o);
  auto small = mlp_shape();
  auto big = small;
  big.flops_per_sample *= 100;
  CHECK(planner.useful_members(small) > planner.useful_members(big));
  CHECK(planner.useful_members(big) >= 1);
  o.fuse = FuseMode::Never;
  CHECK(Planner({}, o).useful_members(small) == 1);
}

TEST_CASE("a plan never exceeds capacity and places every trial that fits") {
  PlanOptions o;
  o.balance = false;
  Planner planner({}, o);
  const auto s = mlp_shape();
  const auto one = planner.memory_model().solo_bytes(s);
  std::vector<ActorSpec> actors{{0, "cpu", 3 * one + one / 2, 0, 100}, {1, "cpu", 2 * one + one / 2, 0, 100}};
  auto trials = demands(10, s);
  const auto plan = planner.plan(actors, trials);
  check_capacity(plan, planner);
  CHECK(placed_ids(plan).size() + plan.unplaced.size() == 10);
  CHECK(placed_ids(plan).size() >= 3);
  for (const auto& u : plan.unplaced) CHECK(u.reason.find("waits for room") == 0);

  // A trial larger than any actor says so.
  auto huge = s;
  huge.key = "huge";
  huge.parameters *= 1000;
  const auto p2 = planner.plan(actors, {{99, huge, 1}});
  REQUIRE(p2.unplaced.size() == 1);
  CHECK(p2.unplaced[0].reason.find("more than any actor has") != std::string::npos);
}

TEST_CASE("same-shape trials fuse, other shapes form their own units") {
  PlanOptions o;
  o.step_overhead_seconds = 1;  // fusing always pays
  Planner planner({}, o);
  std::vector<ActorSpec> actors{{0, "cpu", 0, 0, 64}};
  auto trials = demands(4, mlp_shape("a"));
  auto more = demands(2, mlp_shape("b"), 10);
  trials.insert(trials.end(), more.begin(), more.end());
  const auto plan = planner.plan(actors, trials);
  REQUIRE(plan.actors[0].units.size() == 2);
  std::multiset<std::size_t> sizes;
  for (const auto& u : plan.actors[0].units) sizes.insert(u.members.size());
  CHECK(sizes == std::multiset<std::size_t>{2, 4});
}

TEST_CASE("balance spreads work onto idle actors") {
  Planner planner;
  std::vector<ActorSpec> actors;
  for (int i = 0; i < 4; ++i) actors.push_back({i, "cpu", 0, 0, 64});
  const auto plan = planner.plan(actors, demands(16, mlp_shape()));
  CHECK(plan.actors_used() == 4);
  double lo = 1e30, hi = 0;
  for (const auto& a : plan.actors) {
    lo = std::min(lo, a.estimated_seconds);
    hi = std::max(hi, a.estimated_seconds);
  }
  CHECK(hi <= 2.5 * lo);
}

TEST_CASE("on small random instances FFD uses within 5% of the fewest actors") {
  std::mt19937 rng(7);
  int ffd_total = 0, exact_total = 0;
  for (int instance = 0; instance < 60; ++instance) {
    PlanOptions o;
    o.balance = false;
    o.fuse = FuseMode::Never;  // pure bin packing: one unit per trial
    Planner planner({}, o);
    const int n = 4 + static_cast<int>(rng() % 5);
    std::vector<TrialDemand> trials;
    std::vector<std::int64_t> sizes;
    for (int i = 0; i < n; ++i) {
      auto s = mlp_shape("t" + std::to_string(i));
      s.parameters = 20000 + static_cast<std::int64_t>(rng() % 300000);
      s.largest_parameter = s.parameters / 2;
      s.activations_per_sample = 100 + rng() % 3000;
      trials.push_back({i, s, 1});
      sizes.push_back(planner.memory_model().solo_bytes(s));
    }
    // Capacity: holds the largest trial with some room, so bins are shared.
    const auto biggest = *std::max_element(sizes.begin(), sizes.end());
    const auto capacity = biggest + biggest / 2 + static_cast<std::int64_t>(rng() % biggest);
    std::vector<ActorSpec> actors;
    for (int i = 0; i < n; ++i) actors.push_back({i, "cpu", capacity, 0, 100});
    const auto plan = planner.plan(actors, trials);
    REQUIRE(plan.unplaced.empty());
    check_capacity(plan, planner);
    // Exact: try every assignment to k bins with the same memory rule (sum of persistent
    // plus the largest transient), smallest k first.
    std::vector<UnitEstimate> est;
    for (const auto& t : trials) est.push_back(planner.memory_model().estimate(t.shape, 1));
    int best = n;
    for (int k = 1; k < n && best == n; ++k) {
      std::vector<int> bin(static_cast<std::size_t>(n), 0);
      std::function<bool(int, int)> assign = [&](int i, int used) -> bool {
        if (i == n) return true;
        for (int b = 0; b < std::min(used + 1, k); ++b) {
          bin[static_cast<std::size_t>(i)] = b;
          std::int64_t persistent = 0, transient = 0;
          for (int j = 0; j <= i; ++j) {
            if (bin[static_cast<std::size_t>(j)] != b) continue;
            persistent += est[static_cast<std::size_t>(j)].persistent;
            transient = std::max(transient, est[static_cast<std::size_t>(j)].transient);
          }
          if (persistent + transient <= capacity && assign(i + 1, std::max(used, b + 1))) return true;
        }
        return false;
      };
      if (assign(0, 0)) best = k;
    }
    ffd_total += plan.actors_used();
    exact_total += best;
    CHECK(plan.actors_used() >= best);
  }
  CHECK(ffd_total <= exact_total * 1.05);
}

TEST_CASE("re-planning keeps trials in place and fills freed room") {
  PlanOptions o;
  o.balance = false;
  o.fuse = FuseMode::Never;
  Planner planner({}, o);
  const auto s = mlp_shape();
  const auto one = planner.memory_model().solo_bytes(s);
  std::vector<ActorSpec> actors{{0, "cpu", 4 * one, 0, 100}, {1, "cpu", 4 * one, 0, 100}};
  auto plan = planner.plan(actors, demands(6, s));
  auto where = [&](std::int64_t id) {
    for (const auto& a : plan.actors)
      for (const auto& u : a.units)
        for (const auto& m : u.members)
          if (m.trial == id) return a.actor.id;
    return -1;
  };
  std::map<std::int64_t, int> before;
  for (std::int64_t id = 0; id < 6; ++id) before[id] = where(id);
  const int moved = planner.replan(plan, {0, 1}, demands(2, s, 100));
  CHECK(moved == 0);
  for (std::int64_t id = 2; id < 6; ++id) CHECK(where(id) == before[id]);
  CHECK(where(100) >= 0);
  CHECK(where(101) >= 0);
  CHECK(where(0) == -1);
  check_capacity(plan, planner);

  // The model's figure doubles: actors over capacity give up units, nothing is lost.
  auto& model = const_cast<MemoryModel&>(planner.memory_model());
  model.correct_upward(s.key, 1.9);
  const int moved2 = planner.replan(plan, {}, {});
  CHECK(moved2 + static_cast<int>(plan.unplaced.size()) >= 2);
  CHECK(placed_ids(plan).size() + plan.unplaced.size() == 6);
  check_capacity(plan, planner);
}

TEST_CASE("online placement joins a unit of the same shape and respects the member cap") {
  Planner planner;
  Plan plan;
  for (int i = 0; i < 2; ++i) {
    ActorPlan a;
    a.actor = {i, "cpu", 0, 0, 3};
    plan.actors.push_back(a);
  }
  const auto s = mlp_shape();
  std::vector<int> where;
  for (std::int64_t id = 0; id < 6; ++id) {
    auto a = planner.place(plan, {id, s, 10});
    REQUIRE(a);
    where.push_back(*a);
  }
  Unplaced why;
  CHECK_FALSE(planner.place(plan, {6, s, 10}, &why));
  CHECK(why.reason.find("waits for room") == 0);
  CHECK(why.waits);
  CHECK(planner.remove(plan, 0));
  CHECK(planner.place(plan, {6, s, 10}) == where[0]);
}

TEST_CASE("mixed_packs: CPU actors take one unit under auto, GPU actors many") {
  CHECK(parse_mixed_packs("auto") == MixedPacks::Auto);
  CHECK_THROWS_WITH(parse_mixed_packs("sometimes"), Catch::Contains("expected auto, always or never"));
  CHECK(units_per_actor(MixedPacks::Auto, "cpu") == 1);
  CHECK(units_per_actor(MixedPacks::Auto, "cuda:1") > 1000);
  CHECK(units_per_actor(MixedPacks::Never, "cuda:0") == 1);
  CHECK(units_per_actor(MixedPacks::Always, "cpu") > 1000);
}

TEST_CASE("an actor with one unit slot takes no second unit, online or planned") {
  const auto a_shape = mlp_shape("a");
  const auto b_shape = mlp_shape("b");
  auto actors = [](int units) {
    std::vector<ActorSpec> out;
    for (int i = 0; i < 2; ++i) {
      ActorSpec spec{i, "cpu", 0, 0, 8};
      spec.max_units = units;
      out.push_back(spec);
    }
    return out;
  };
  SECTION("online: the third trial waits, and takes the slot its unit left") {
    PlanOptions o;
    o.fuse = FuseMode::Never;
    Planner planner({}, o);
    Plan plan;
    for (const auto& spec : actors(1)) plan.actors.push_back(ActorPlan{spec});
    for (auto& a : plan.actors) planner.refresh(a);
    REQUIRE(planner.place(plan, {0, a_shape, 10}) == 0);
    REQUIRE(planner.place(plan, {1, b_shape, 10}) == 1);
    CHECK_FALSE(planner.takes_more(plan.actors[0]));
    Unplaced why;
    CHECK_FALSE(planner.place(plan, {2, a_shape, 10}, &why));
    CHECK(why.waits);
    CHECK(planner.remove(plan, 1));
    CHECK(planner.takes_more(plan.actors[1]));
    CHECK(planner.place(plan, {2, a_shape, 10}) == 1);
  }
  SECTION("fuse always: a same-shape trial still joins the one unit, another shape waits") {
    PlanOptions o;
    o.fuse = FuseMode::Always;
    Planner planner({}, o);
    Plan plan;
    plan.actors.push_back(ActorPlan{actors(1).front()});
    planner.refresh(plan.actors.front());
    REQUIRE(planner.place(plan, {0, a_shape, 10}) == 0);
    CHECK(planner.takes_more(plan.actors[0]));
    CHECK(planner.place(plan, {1, a_shape, 10}) == 0);
    CHECK(plan.actors[0].units.size() == 1);
    CHECK_FALSE(planner.place(plan, {2, b_shape, 10}));
  }
  SECTION("a plan from scratch and its balance keep to the slots; the rest wait") {
    PlanOptions o;
    o.fuse = FuseMode::Never;
    Planner planner({}, o);
    std::vector<TrialDemand> trials = demands(3, a_shape);
    for (auto& t : demands(3, b_shape, 3)) trials.push_back(t);
    const auto one = planner.plan(actors(1), trials);
    check_capacity(one, planner);
    CHECK(placed_ids(one).size() == 2);
    CHECK(one.unplaced.size() == 4);
    for (const auto& u : one.unplaced) CHECK(u.waits);
    const auto two = planner.plan(actors(2), trials);
    check_capacity(two, planner);
    CHECK(placed_ids(two).size() == 4);
    const auto any = planner.plan(actors(1 << 30), trials);
    CHECK(placed_ids(any).size() == 6);
  }
}

namespace {

// A model plugin's shape: no formula, its figure is what an actor measures.
TrialShape plugin_shape(const std::string& key, std::int64_t width_rank = 1) {
  TrialShape s;
  s.key = key;
  s.fusion = "vgg/b64";
  s.memory_unknown = true;
  s.width_rank = width_rank;
  s.batch_size = 64;
  return s;
}

}  // namespace

TEST_CASE("a shape no formula knows takes its measured bytes per member, never lowered") {
  MemoryModel model;
  const auto s = plugin_shape("vgg/c16");
  CHECK(model.unmeasured(s));
  CHECK(model.solo_bytes(s) == 0);
  model.record_measurement(s, 2, 300 * MiB);
  CHECK_FALSE(model.unmeasured(s));
  CHECK(model.solo_bytes(s) == 150 * MiB);
  CHECK(model.estimate(s, 3).peak() == 450 * MiB);
  model.record_measurement(s, 1, 100 * MiB);
  CHECK(model.solo_bytes(s) == 150 * MiB);
  model.correct_upward(s.key, 2.0);
  CHECK(model.solo_bytes(s) == 300 * MiB);
  CHECK_FALSE(model.measured("vgg/c32"));
}

TEST_CASE("an unmeasured shape trains alone on its actor until an actor measured it") {
  PlanOptions o;
  o.fuse = FuseMode::Always;
  o.balance = false;
  Planner planner({}, o);
  std::vector<ActorSpec> actors;
  for (int i = 0; i < 3; ++i) actors.push_back({i, "cuda:0", 4096 * MiB, 0, 8});  // many units each
  const auto narrow = plugin_shape("vgg/c16", 16);
  const auto wide = plugin_shape("vgg/c64", 64);
  auto trials = demands(3, narrow);
  trials.push_back({3, mlp_shape(), 100});

  SECTION("planned: one trial an actor, the rest wait for room") {
    const auto plan = planner.plan(actors, trials);
    for (const auto& a : plan.actors) {
      if (a.units.empty()) continue;
      const bool holds_plugin = a.units.front().members.front().shape.memory_unknown;
      if (holds_plugin) {
        CHECK(a.units.size() == 1);
        CHECK(a.members() == 1);
      }
    }
    CHECK(placed_ids(plan).size() + plan.unplaced.size() == 4);
    REQUIRE_FALSE(plan.unplaced.empty());
    for (const auto& u : plan.unplaced) CHECK(u.waits);
  }
  SECTION("online: not beside another unit, and nothing joins it") {
    Plan plan;
    for (const auto& spec : actors) plan.actors.push_back(ActorPlan{spec});
    for (auto& a : plan.actors) planner.refresh(a);
    REQUIRE(planner.place(plan, {3, mlp_shape(), 100}) == 0);
    CHECK(planner.place(plan, {0, narrow, 100}) == 1);
    CHECK(planner.place(plan, {1, narrow, 100}) == 2);
    Unplaced why;
    CHECK_FALSE(planner.place(plan, {2, narrow, 100}, &why));
    CHECK(why.waits);
    CHECK_THAT(why.reason, Catch::Contains("memory is unmeasured"));
    CHECK(planner.unit_of(plan, 1)->members.size() == 1);
  }
  SECTION("measured: its trials fuse, padded to the widest member's figure") {
    planner.memory_model().record_measurement(narrow, 1, 100 * MiB);
    planner.memory_model().record_measurement(wide, 1, 300 * MiB);
    trials.push_back({4, wide, 100});
    const auto plan = planner.plan(actors, trials);
    CHECK(plan.unplaced.empty());
    const auto* unit = planner.unit_of(plan, 4);
    REQUIRE(unit);
    CHECK(unit->members.size() == 4);
    CHECK(unit->estimate.peak() == 4 * 300 * MiB);
    for (const auto& a : plan.actors) CHECK(a.estimated_bytes <= a.actor.capacity_bytes);
  }
}

TEST_CASE("a shape that never fuses trains in units of its own, measured and under fuse always") {
  // A TorchScript module's trials: separate modules packed beside each other, never stacked.
  PlanOptions o;
  o.fuse = FuseMode::Always;
  o.balance = false;
  Planner planner({}, o);
  auto module = plugin_shape("torchscript/small.pt/b64/sgd");
  module.fusion = "torchscript/small.pt/b64";
  module.fuses = false;
  planner.memory_model().record_measurement(module, 1, 100 * MiB);
  std::vector<ActorSpec> actors{{0, "cuda:0", 4096 * MiB, 0, 8}};
  CHECK(planner.useful_members(module, "cuda:0") == 1);
  SECTION("planned") {
    const auto plan = planner.plan(actors, demands(4, module));
    REQUIRE(plan.actors[0].units.size() == 4);
    for (const auto& u : plan.actors[0].units) {
      CHECK(u.members.size() == 1);
      CHECK(u.solo);
    }
  }
  SECTION("online") {
    Plan plan;
    plan.actors.push_back(ActorPlan{actors[0]});
    planner.refresh(plan.actors[0]);
    for (std::int64_t trial = 0; trial < 3; ++trial) REQUIRE(planner.place(plan, {trial, module, 100}) == 0);
    CHECK(plan.actors[0].units.size() == 3);
    for (std::int64_t trial = 0; trial < 3; ++trial) CHECK(planner.unit_of(plan, trial)->members.size() == 1);
  }
  SECTION("the same shape that fuses forms one unit") {
    module.fuses = true;
    const auto plan = planner.plan(actors, demands(4, module));
    CHECK(plan.actors[0].units.size() == 1);
  }
}
