#include <catch2/catch.hpp>

#include <set>

#include "packtune/error.hpp"
#include "../tuner_test_support.hpp"

using namespace packtune::tuners;
using namespace packtune::tuners::testing;

namespace {
TunerContext grid_context(std::int64_t trials, nlohmann::json settings = {}) {
  auto c = make_context(1, 5, trials, Mode::Max, std::move(settings));
  c.space = SearchSpace::from_json(nlohmann::json::parse(R"({
    "opt": {"type": "choice", "values": ["sgd", "adam"]},
    "lr": {"type": "loguniform", "low": 0.001, "high": 0.1}
  })"));
  return c;
}
}  // namespace

TEST_CASE("grid search runs every point once at the max budget") {
  auto tuner = TunerRegistry::instance().create("grid", grid_context(0, {{"grid_points", 2}}));
  std::set<std::string> seen;
  for (int i = 0; i < 4; ++i) {
    const Job job = tuner->next_job();
    REQUIRE(job.kind == Job::Kind::Start);
    CHECK(job.trial == i);
    CHECK(job.budget == 5);
    seen.insert(to_json(job.config).dump());
  }
  CHECK(seen.size() == 4);
  CHECK(tuner->next_job().kind == Job::Kind::Wait);
  for (int i = 0; i < 4; ++i) tuner->on_result(i, 5, 0.1 * i);
  CHECK(tuner->next_job().kind == Job::Kind::Finished);
}

TEST_CASE("grid search takes a trial limit at least as large as the grid") {
  auto& registry = TunerRegistry::instance();
  CHECK_NOTHROW(registry.create("grid", grid_context(100)));  // 2 x 3 points
  CHECK_THAT(error_of([&] { registry.create("grid", grid_context(5)); }),
             Catch::Contains("tuner.trials") && Catch::Contains("6 points"));
  CHECK_THAT(error_of([&] { registry.create("grid", grid_context(0, {{"grid_points", 0}})); }),
             Catch::Contains("tuner.grid_points"));
  CHECK_THAT(error_of([&] { registry.create("grid", grid_context(0, {{"eta", 3}})); }),
             Catch::Contains("tuner.eta") && Catch::Contains("unknown key for the grid tuner"));
}
