#include <catch2/catch.hpp>

#include <map>
#include <utility>

#include "driver/rung_replan.hpp"
#include "mlp_shape.hpp"

using namespace packtune;

namespace {

using packtune::testing::mlp_shape;

constexpr std::int64_t MiB = std::int64_t{1} << 20;

packing::TrialDemand demand(std::int64_t trial, int width, const std::string& family = "mlp") {
  return {trial, mlp_shape(width, family), 100};
}

packing::Planner fusing_planner() {
  packing::PlanOptions o;
  o.fuse = packing::FuseMode::Always;
  return packing::Planner({}, o);
}

// `count` actors of `capacity` bytes (0: no memory limit) holding at most `members` trials.
packing::Plan actors(const packing::Planner& planner, int count, int members, std::int64_t capacity = 0) {
  packing::Plan plan;
  for (int i = 0; i < count; ++i) {
    packing::ActorPlan a;
    a.actor.id = i;
    a.actor.capacity_bytes = capacity;
    a.actor.max_members = members;
    planner.refresh(a);
    plan.actors.push_back(std::move(a));
  }
  return plan;
}

// trial -> (actor id, unit id) for every planned trial.
std::map<std::int64_t, std::pair<int, std::int64_t>> where(const packing::Plan& plan) {
  std::map<std::int64_t, std::pair<int, std::int64_t>> out;
  for (const auto& a : plan.actors) {
    for (const auto& u : a.units) {
      for (const auto& m : u.members) out[m.trial] = {a.actor.id, u.id};
    }
  }
  return out;
}

std::vector<std::int64_t> trials_of(const std::vector<packing::TrialDemand>& demands) {
  std::vector<std::int64_t> ids;
  for (const auto& d : demands) ids.push_back(d.trial);
  return ids;
}

}  // namespace

TEST_CASE("promoted trials are planned by fusion key, widest first, ties in the tuner's order") {
  const auto order = planning_order(
      {demand(1, 32), demand(2, 64, "cnn"), demand(3, 128), demand(4, 32), demand(5, 16, "cnn"), demand(6, 128)});
  CHECK(trials_of(order) == std::vector<std::int64_t>{3, 6, 1, 4, 2, 5});
}

TEST_CASE("a rung's promoted trials form fused units together and every one is placed") {
  auto planner = fusing_planner();
  auto plan = actors(planner, 2, 4);
  const auto placement = replan_rung(planner, plan, {demand(1, 32), demand(2, 64), demand(3, 32), demand(4, 64)});
  CHECK(placement.replanned);
  CHECK(placement.waiting.empty());
  REQUIRE(placement.placed.size() == 4);
  // Widest first: the two 64-wide trials start before the 32-wide ones.
  CHECK(placement.placed[0].trial == 2);
  CHECK(placement.placed[1].trial == 4);
  const auto planned = where(plan);
  REQUIRE(planned.size() == 4);
  for (const auto& p : placement.placed) CHECK(planned.at(p.trial).first == p.actor);
  // Fused: fewer units than trials, and the counts match the plan.
  std::map<std::int64_t, int> unit_sizes;
  for (const auto& [trial, at] : planned) ++unit_sizes[at.second];
  CHECK(placement.units == static_cast<int>(unit_sizes.size()));
  CHECK(placement.units < 4);
  CHECK(plan.unplaced.empty());
}

TEST_CASE("running jobs stay on their actors and in their units at a rung boundary") {
  auto planner = fusing_planner();
  auto plan = actors(planner, 2, 4);
  for (std::int64_t t = 10; t < 13; ++t) REQUIRE(planner.place(plan, demand(t, 64)));
  const auto before = where(plan);
  const auto placement = replan_rung(planner, plan, {demand(1, 64), demand(2, 32), demand(3, 64)});
  CHECK(placement.replanned);
  const auto after = where(plan);
  for (const auto& [trial, at] : before) CHECK(after.at(trial) == at);
  CHECK(placement.placed.size() + placement.waiting.size() == 3);
}

TEST_CASE("promoted trials beyond the actors' room wait, in planning order, outside the plan") {
  auto planner = fusing_planner();
  auto plan = actors(planner, 2, 2);
  const auto placement =
      replan_rung(planner, plan, {demand(1, 32), demand(2, 32), demand(3, 32), demand(4, 32), demand(5, 16), demand(6, 16)});
  CHECK(placement.placed.size() == 4);
  CHECK(placement.waiting == std::vector<std::int64_t>{5, 6});
  CHECK(plan.unplaced.empty());
  CHECK(where(plan).size() == 4);
  CHECK(placement.actors == 2);
}

TEST_CASE("when re-planning would move a running unit, the promoted trials are placed one by one") {
  auto planner = fusing_planner();
  auto plan = actors(planner, 2, 8, 64 * MiB);
  // Running: a wide trial on each actor.
  REQUIRE(planner.place(plan, demand(10, 2048)));
  REQUIRE(planner.place(plan, demand(11, 2048)));
  const auto before = where(plan);
  // Its shape's figure is corrected far upward (it ran out of memory elsewhere): replan would
  // evict the running units from actors now over capacity.
  planner.memory_model().correct_upward(mlp_shape(2048).key, 8.0);
  for (auto& a : plan.actors) planner.refresh(a);
  const auto placement = replan_rung(planner, plan, {demand(1, 16), demand(2, 16)});
  CHECK_FALSE(placement.replanned);
  const auto after = where(plan);
  for (const auto& [trial, at] : before) CHECK(after.at(trial) == at);
  CHECK(placement.placed.size() + placement.waiting.size() == 2);
  CHECK(plan.unplaced.empty());
}
