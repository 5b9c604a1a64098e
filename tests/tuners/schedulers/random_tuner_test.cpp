#include <catch2/catch.hpp>

#include "packtune/error.hpp"
#include "tuners/tuner_registry.hpp"

using namespace packtune::tuners;

namespace {
TunerContext context(std::int64_t trials, std::uint64_t seed) {
  TunerContext c;
  c.space = SearchSpace::from_json(
      nlohmann::json::parse(R"({"lr": {"type": "loguniform", "low": 1e-4, "high": 1e-1}})"));
  c.max_trials = trials;
  c.max_budget = 2.5;
  c.seed = seed;
  return c;
}
}  // namespace

TEST_CASE("random search starts each trial once at the full budget, then finishes") {
  auto tuner = TunerRegistry::instance().create("random", context(3, 1));
  std::vector<Job> jobs;
  for (int i = 0; i < 3; ++i) jobs.push_back(tuner->next_job());
  for (int i = 0; i < 3; ++i) {
    CHECK(jobs[i].kind == Job::Kind::Start);
    CHECK(jobs[i].trial == i);
    CHECK(jobs[i].budget == 2.5);
  }
  CHECK(tuner->next_job().kind == Job::Kind::Wait);
  tuner->on_result(0, 2.5, 0.5);
  tuner->on_result(2, 2.5, 0.7);
  CHECK(tuner->next_job().kind == Job::Kind::Wait);
  tuner->on_result(1, 2.5, 0.6);
  CHECK(tuner->next_job().kind == Job::Kind::Finished);
}

TEST_CASE("random search is deterministic for a seed") {
  auto a = TunerRegistry::instance().create("random", context(5, 9));
  auto b = TunerRegistry::instance().create("random", context(5, 9));
  for (int i = 0; i < 5; ++i) CHECK(a->next_job().config == b->next_job().config);
}

TEST_CASE("unknown tuners and bad settings are input errors") {
  CHECK_THROWS_AS(TunerRegistry::instance().create("nope", context(1, 0)), packtune::InputError);
  CHECK_THROWS_AS(TunerRegistry::instance().create("random", context(0, 0)), packtune::InputError);
  auto c = context(2, 0);
  c.settings["eta"] = 3;
  CHECK_THROWS_AS(TunerRegistry::instance().create("random", c), packtune::InputError);
}

TEST_CASE("better() treats NaN as the worst value in both modes") {
  CHECK(better(0.9, 0.8, Mode::Max));
  CHECK(better(0.1, 0.8, Mode::Min));
  CHECK(better(0.1, std::nan(""), Mode::Max));
  CHECK_FALSE(better(std::nan(""), 0.1, Mode::Min));
}
