#include "actors/throughput_profile.hpp"

#include <catch2/catch.hpp>

#include "test_device.hpp"

using namespace packtune::actors;
using namespace packtune::spec;
using packtune::testing::test_device;

TEST_CASE("a doubling pays only beyond min_gain and the timing's own spread") {
  // Two members in 1.8x one member's time: 11% more throughput.
  CHECK(doubling_pays(1, 1.0, 0.02, 2, 1.8, 0.03, 0.05));
  CHECK_FALSE(doubling_pays(1, 1.0, 0.02, 2, 1.8, 0.03, 0.15));
  // The same 11% with windows 15% apart is noise.
  CHECK_FALSE(doubling_pays(1, 1.0, 0.15, 2, 1.8, 0.01, 0.05));
  CHECK_FALSE(doubling_pays(1, 1.0, 0.01, 2, 1.8, 0.15, 0.05));
  // No gain at all.
  CHECK_FALSE(doubling_pays(2, 1.0, 0, 4, 2.0, 0, 0.05));
  // A GPU's fixed cost per step: 4 members in 1.1x the time of 2.
  CHECK(doubling_pays(2, 1.0, 0.05, 4, 1.1, 0.05, 0.05));
}

TEST_CASE("a profile times K = 1, 2, 4 ... and stops at max_members") {
  TrialSpec spec;
  spec.model.family = "mlp";
  spec.model.depth = 1;
  spec.model.width = 16;
  spec.batch_size = 16;
  const InputShape input{1, 28, 28, 10};
  ThroughputProfiler one(spec, 1, input, test_device());
  CHECK_FALSE(one.advance());
  REQUIRE(one.points().size() == 1);
  CHECK(one.points().front().first == 1);
  CHECK(one.points().front().second > 0);

  ThroughputProfiler up_to_four(spec, 4, input, test_device(), {}, -1.0);  // every doubling "pays"
  int advances = 0;
  while (up_to_four.advance()) ++advances;
  CHECK(advances <= 2);
  CHECK(up_to_four.done());
  REQUIRE_FALSE(up_to_four.points().empty());
  for (std::size_t i = 0; i < up_to_four.points().size(); ++i) {
    CHECK(up_to_four.points()[i].first == 1 << i);
    CHECK(up_to_four.points()[i].second > 0);
  }
  CHECK(up_to_four.error().empty());

  // With each member reading its own order, as a run with data.order per_trial profiles.
  packtune::datasets::StreamOptions own_order;
  own_order.order_per_trial = true;
  ThroughputProfiler own(spec, 2, input, test_device(), own_order, -1.0);
  while (own.advance()) {
  }
  REQUIRE(own.points().size() == 2);
  CHECK(own.points().back().second > 0);
  CHECK(own.error().empty());
}
