#include <catch2/catch.hpp>

#include "packing/memory_model.hpp"
#include "packing/planner.hpp"

using namespace packtune::packing;

TEST_CASE("the memory model counts state and activations") {
  TrialShape s;
  s.parameters = 1000;
  s.activations_per_sample = 50;
  s.batch_size = 10;
  s.optimizer_slots = 2;
  CHECK(estimate_bytes(s) == (1000 * 4 + 2 * 50 * 10) * 4);
}

TEST_CASE("trials go to the least loaded actor that has room") {
  std::vector<ActorLoad> actors = {{0, 2, 4, 1000, 600}, {1, 1, 4, 1000, 900}, {2, 1, 4, 1000, 100}};
  CHECK(place_trial(actors, 50) == 2);   // fewest members, most free memory
  CHECK(place_trial(actors, 500) == 2);
  CHECK(place_trial(actors, 950) == std::nullopt);
  CHECK(fits_anywhere(actors, 950));
  CHECK_FALSE(fits_anywhere(actors, 1001));
  actors[2].members = 4;                 // full by member count
  CHECK(place_trial(actors, 50) == 1);
  CHECK(place_trial(actors, 300) == 0);  // actor 1 lacks memory
}

TEST_CASE("unknown capacity leaves only the member cap") {
  std::vector<ActorLoad> actors = {{3, 0, 1, 0, 0}};
  CHECK(place_trial(actors, std::int64_t{1} << 40) == 3);
  actors[0].members = 1;
  CHECK(place_trial(actors, 1) == std::nullopt);
}
