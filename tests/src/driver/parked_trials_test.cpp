#include <catch2/catch.hpp>

#include "driver/parked_trials.hpp"

using namespace packtune;

TEST_CASE("a trial is parked where its job ended only when its Assign parked it, until it leaves its place") {
  ParkedTrials parked;
  parked.assigned(3, true);
  parked.assigned(4, false);
  CHECK(parked.parks(3));
  CHECK_FALSE(parked.parks(4));
  CHECK(parked.empty());  // running, not parked yet

  parked.ended(3, 1);
  parked.ended(4, std::nullopt);
  CHECK_FALSE(parked.parks(3));  // that job is over: the next Assign says again
  CHECK(parked.size() == 1);
  CHECK(parked.actor_of(3) == std::optional<int>(1));
  CHECK_FALSE(parked.actor_of(4));
  CHECK(parked.all() == std::map<tuners::TrialId, int>{{3, 1}});

  // Its next job is assigned in place and parks it again; meanwhile its place is taken.
  parked.assigned(3, true);
  parked.unpark(3);
  CHECK(parked.empty());
  CHECK(parked.parks(3));
  // That job fails: the trial is not parked.
  parked.ended(3, std::nullopt);
  CHECK(parked.empty());
  CHECK_FALSE(parked.parks(3));
}

TEST_CASE("an Assign that no longer parks a trial clears what an earlier one asked") {
  ParkedTrials parked;
  parked.assigned(7, true);
  parked.assigned(7, false);  // pbt's last generation trains to the end
  CHECK_FALSE(parked.parks(7));
}
