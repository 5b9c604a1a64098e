// The indexed planner against the scanning planner it replaced (reference_planner.hpp): the
// same plans, placement for placement, and the invariants of its indices.
#include <algorithm>
#include <map>
#include <random>
#include <set>
#include <tuple>

#include <catch2/catch.hpp>

#include "packing/planner.hpp"
#include "reference_planner.hpp"

using namespace packtune::packing;

namespace {

// Who holds what: per actor, its units in order with their ids, solo flags and members.
using Layout = std::vector<std::vector<std::tuple<std::int64_t, bool, std::vector<std::int64_t>>>>;

Layout layout(const Plan& plan) {
  Layout out;
  for (const auto& a : plan.actors) {
    out.emplace_back();
    for (const auto& u : a.units) {
      std::vector<std::int64_t> ids;
      for (const auto& m : u.members) ids.push_back(m.trial);
      out.back().emplace_back(u.id, u.solo, ids);
    }
  }
  return out;
}

std::vector<std::pair<std::int64_t, std::string>> unplaced(const Plan& plan) {
  std::vector<std::pair<std::int64_t, std::string>> out;
  for (const auto& u : plan.unplaced) out.emplace_back(u.demand.trial, u.reason);
  return out;
}

void require_same(const Plan& mine, const Plan& old) {
  REQUIRE(layout(mine) == layout(old));
  REQUIRE(unplaced(mine) == unplaced(old));
  for (std::size_t i = 0; i < mine.actors.size(); ++i) {
    REQUIRE(mine.actors[i].estimated_bytes == old.actors[i].estimated_bytes);
    REQUIRE(mine.actors[i].estimated_seconds == old.actors[i].estimated_seconds);
  }
}

// Nothing lost or doubled, no actor over its memory or member cap, every trial found where it is.
void require_sound(const Planner& planner, const Plan& plan, const std::set<std::int64_t>& expected) {
  std::multiset<std::int64_t> seen;
  for (const auto& a : plan.actors) {
    int members = 0;
    for (const auto& u : a.units) {
      REQUIRE(!u.members.empty());
      for (const auto& m : u.members) {
        seen.insert(m.trial);
        REQUIRE(Planner::unit_of(plan, m.trial) == &u);
      }
      members += static_cast<int>(u.members.size());
    }
    REQUIRE(members == a.members());
    REQUIRE(a.members() <= a.actor.max_members);
    REQUIRE(static_cast<int>(a.units.size()) <= a.actor.max_units);
    if (a.actor.capacity_bytes > 0) {
      REQUIRE(a.estimated_bytes <= static_cast<std::int64_t>(a.actor.capacity_bytes * (1 - planner.options().headroom)));
    }
  }
  for (const auto& u : plan.unplaced) seen.insert(u.demand.trial);
  REQUIRE(std::set<std::int64_t>(seen.begin(), seen.end()).size() == seen.size());
  REQUIRE(std::set<std::int64_t>(seen.begin(), seen.end()) == expected);
}

struct Instance {
  std::vector<ActorSpec> actors;
  std::vector<TrialDemand> trials;
  std::vector<TrialShape> shapes;
};

// A random mix: shapes that share a fusion key at several widths, SGD and Adam, a few
// device kinds, actors from tight to roomy; steps drawn so that loads tie and near-tie.
Instance random_instance(std::mt19937& rng, int trials, int actors) {
  Instance in;
  const int families = 1 + static_cast<int>(rng() % 4);
  for (int f = 0; f < families; ++f) {
    const int widths = 1 + static_cast<int>(rng() % 3);
    for (int w = 0; w < widths; ++w) {
      TrialShape s;
      s.key = "f" + std::to_string(f) + "w" + std::to_string(w);
      s.fusion = rng() % 3 ? "f" + std::to_string(f) : "";
      s.parameters = 20000 + static_cast<std::int64_t>(rng() % 400000);
      s.largest_parameter = s.parameters / 2;
      s.activations_per_sample = 500 + static_cast<std::int64_t>(rng() % 20000);
      s.flops_per_sample = s.parameters * 2 + s.activations_per_sample * (1 + static_cast<std::int64_t>(rng() % 10));
      s.batch_size = 32 << (f % 3);
      s.optimizer_slots = static_cast<int>(rng() % 3);
      s.adaptive = s.optimizer_slots == 2;
      s.weight_decay = rng() % 2;
      in.shapes.push_back(s);
    }
  }
  const std::int64_t one = formula_estimate(in.shapes.front(), 1).peak();
  const char* devices[] = {"cuda:0", "cuda:1", "cpu", ""};
  const int kinds = 1 + static_cast<int>(rng() % 3);
  for (int a = 0; a < actors; ++a) {
    ActorSpec spec;
    spec.id = 100 + a;
    spec.device = devices[rng() % kinds];
    spec.capacity_bytes = rng() % 8 ? one * (2 + static_cast<std::int64_t>(rng() % 30)) : 0;
    spec.base_bytes = rng() % 2 ? one / 4 : 0;
    spec.max_members = rng() % 5 ? 1 + static_cast<int>(rng() % 12) : 64;
    // A CPU actor under mixed_packs auto takes one unit; some take a few.
    if (rng() % 3 == 0) spec.max_units = 1 + static_cast<int>(rng() % 3);
    in.actors.push_back(spec);
  }
  for (int t = 0; t < trials; ++t) {
    const double steps = rng() % 2 ? 100 : 50.0 + static_cast<double>(rng() % 200);
    in.trials.push_back({t, in.shapes[rng() % in.shapes.size()], steps});
  }
  return in;
}

// The driver's count of trials it could start, as it scanned every actor before the index kept it.
std::int64_t scanned_free_slots(const Planner& planner, const Plan& plan) {
  std::int64_t free = 0;
  for (const auto& a : plan.actors) {
    if (!planner.takes_more(a)) continue;
    const int units_left = std::max(1, a.actor.max_units - static_cast<int>(a.units.size()));
    free += std::min(a.actor.max_members - a.members(), units_left);
  }
  return free;
}

PlanOptions random_options(std::mt19937& rng) {
  PlanOptions o;
  o.fuse = std::vector<FuseMode>{FuseMode::Auto, FuseMode::Auto, FuseMode::Always, FuseMode::Never}[rng() % 4];
  o.balance = rng() % 4 != 0;
  o.headroom = rng() % 2 ? 0.1 : 0.0;
  // From "fusing never pays" to "it always does" under the prior.
  o.step_overhead_seconds = std::vector<double>{1e-5, 1e-3, 1e-2, 1}[rng() % 4];
  return o;
}

}  // namespace

TEST_CASE("plan and replan make the plans the scanning planner made") {
  std::mt19937 rng(12);
  for (int round = 0; round < 150; ++round) {
    const int trials = 1 + static_cast<int>(rng() % (round < 120 ? 60 : 400));
    const int actors = 1 + static_cast<int>(rng() % (round < 120 ? 12 : 60));
    auto in = random_instance(rng, trials, actors);
    Planner planner({}, random_options(rng));
    ReferencePlanner old(planner);
    INFO("round " << round << ": " << trials << " trials on " << actors << " actors");

    auto mine = planner.plan(in.actors, in.trials);
    auto theirs = old.plan(in.actors, in.trials);
    require_same(mine, theirs);
    std::set<std::int64_t> expected;
    for (const auto& t : in.trials) expected.insert(t.trial);
    require_sound(planner, mine, expected);

    // Rungs: most leave, some come back promoted with other steps, new ones arrive.
    for (int rung = 0; rung < 3; ++rung) {
      std::vector<std::int64_t> leaving;
      std::vector<TrialDemand> arriving;
      for (auto id : expected) {
        if (rng() % 3) leaving.push_back(id);
      }
      std::int64_t next = 1000 * (rung + 1);
      for (std::size_t i = 0; i < leaving.size(); i += 3) {
        arriving.push_back({next++, in.shapes[rng() % in.shapes.size()], 100.0 * (1 + rng() % 3)});
      }
      if (rung == 1) {
        // Corrected figures: some actors end up over their capacity and give units up.
        planner.memory_model().correct_upward(in.shapes.front().key, 1.7);
      }
      REQUIRE(planner.replan(mine, leaving, arriving) == old.replan(theirs, leaving, arriving));
      require_same(mine, theirs);
      REQUIRE(planner.free_slots(mine) == scanned_free_slots(planner, mine));
      for (auto id : leaving) expected.erase(id);
      for (const auto& t : arriving) expected.insert(t.trial);
      require_sound(planner, mine, expected);
    }
  }
}

TEST_CASE("online place and remove match the scanning planner call for call") {
  std::mt19937 rng(34);
  for (int round = 0; round < 60; ++round) {
    auto in = random_instance(rng, 300, 1 + static_cast<int>(rng() % 40));
    Planner planner({}, random_options(rng));
    ReferencePlanner old(planner);
    INFO("round " << round);
    // As the driver builds it: actors first, no trials.
    Plan mine, theirs;
    for (const auto& spec : in.actors) {
      ActorPlan a;
      a.actor = spec;
      mine.actors.push_back(a);
      theirs.actors.push_back(a);
    }
    std::set<std::int64_t> running;
    for (const auto& t : in.trials) {
      if (t.trial == 150) {
        // A profile arrives, and fusing pays where the prior said it did not (or the other
        // way): the driver refreshes every actor, and the free slots follow.
        planner.record_profile("cuda", in.shapes.front(), {{1, 1e-3}, {2, 1.05e-3}, {4, 1.1e-3}, {8, 1.3e-3}});
        for (auto* plan : {&mine, &theirs}) {
          for (auto& a : plan->actors) planner.refresh(a);
        }
        REQUIRE(planner.free_slots(mine) == scanned_free_slots(planner, mine));
      }
      // Finish some, as the driver's jobs do, then place the next.
      while (!running.empty() && rng() % 3 == 0) {
        auto it = running.begin();
        std::advance(it, static_cast<long>(rng() % running.size()));
        REQUIRE(planner.remove(mine, *it) == old.remove(theirs, *it));
        running.erase(it);
        REQUIRE(planner.free_slots(mine) == scanned_free_slots(planner, mine));
      }
      Unplaced why_mine, why_theirs;
      const auto a = planner.place(mine, t, &why_mine);
      const auto b = old.place(theirs, t, &why_theirs);
      REQUIRE(a == b);
      REQUIRE(planner.free_slots(mine) == scanned_free_slots(planner, mine));
      if (a) {
        running.insert(t.trial);
        const auto* unit = Planner::unit_of(mine, t.trial);
        REQUIRE(unit);
        REQUIRE(unit->id == ReferencePlanner::unit_of(theirs, t.trial)->id);
      } else {
        REQUIRE(why_mine.reason == why_theirs.reason);
        REQUIRE(why_mine.waits == why_theirs.waits);
      }
      REQUIRE_FALSE(planner.remove(mine, -5));
    }
    require_same(mine, theirs);
    require_sound(planner, mine, running);
  }
}

TEST_CASE("a plan changed outside the planner is re-read, not trusted") {
  std::mt19937 rng(56);
  auto in = random_instance(rng, 80, 6);
  Planner planner;
  ReferencePlanner old(planner);
  auto mine = planner.plan(in.actors, in.trials);
  auto theirs = old.plan(in.actors, in.trials);
  // The driver re-reads its actors: one leaves, the order changes, each is refreshed.
  for (auto* plan : {&mine, &theirs}) {
    plan->actors.erase(plan->actors.begin() + 1);
    std::reverse(plan->actors.begin(), plan->actors.end());
    for (auto& a : plan->actors) planner.refresh(a);
  }
  // unit_of looks everywhere until the planner re-indexes.
  for (const auto& t : in.trials) {
    const auto* a = Planner::unit_of(mine, t.trial);
    const auto* b = ReferencePlanner::unit_of(theirs, t.trial);
    REQUIRE((a == nullptr) == (b == nullptr));
    if (a) REQUIRE(a->id == b->id);
  }
  for (std::int64_t id = 500; id < 540; ++id) {
    const TrialDemand t{id, in.shapes[static_cast<std::size_t>(id) % in.shapes.size()], 100};
    REQUIRE(planner.place(mine, t) == old.place(theirs, t));
    REQUIRE(planner.remove(mine, id - 480) == old.remove(theirs, id - 480));
    REQUIRE(planner.free_slots(mine) == scanned_free_slots(planner, mine));
  }
  require_same(mine, theirs);
}
