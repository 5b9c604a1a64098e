#include "actors/throughput_profile.hpp"

#include <catch2/catch.hpp>

#include <chrono>
#include <thread>

#include "actors/memory_profile.hpp"
#include "test_device.hpp"

using namespace packtune::actors;
using namespace packtune::spec;
using packtune::testing::test_device;
using Round = ThroughputProfiler::Round;

namespace {

TrialSpec small_mlp() {
  TrialSpec spec;
  spec.model.family = "mlp";
  spec.model.depth = 1;
  spec.model.width = 16;
  spec.batch_size = 16;
  return spec;
}

}  // namespace

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
  const auto spec = small_mlp();
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

TEST_CASE("the pack's own unit stands for a model of its size: its rounds are timed, not a synthetic model's") {
  const auto spec = small_mlp();
  const InputShape input{1, 28, 28, 10};
  int rounds = 0;
  // A round of a pack stands in here: a millisecond, so that a window's time is not nothing.
  const auto round = [&] {
    ++rounds;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  };
  // A unit of `members` whose every round is a plain training step.
  const auto plain_unit = [&](int members) {
    return ThroughputProfiler::PackUnit{members, [&] {
                                          round();
                                          return Round::Plain;
                                        }};
  };

  SECTION("a unit of one is K = 1, and K = 2 is compared with its rounds") {
    ThroughputProfiler profiler(spec, 2, input, test_device(), {}, -1.0);
    const auto unit = plain_unit(1);
    CHECK(profiler.advance(&unit));
    // Warm-up and three windows, all the pack's.
    CHECK(rounds >= 5);
    CHECK(profiler.pack_steps() == rounds);
    REQUIRE(profiler.points().size() == 1);
    CHECK(profiler.points().front().second > 0);
    const int before = rounds;
    CHECK_FALSE(profiler.advance(&unit));
    // K = 2 is a synthetic model; the K = 1 it is compared with is the pack's, warmed up and
    // timed in three windows between K = 2's.
    CHECK(rounds >= before + 5);
    CHECK(profiler.pack_steps() == rounds);
    REQUIRE(profiler.points().size() == 2);
    CHECK(profiler.points().back().first == 2);
    CHECK(profiler.error().empty());
  }
  SECTION("a unit that changes while it is timed is given up: its K is timed on a synthetic model") {
    ThroughputProfiler profiler(spec, 1, input, test_device());
    ThroughputProfiler::PackUnit unit{1, [&] {
                                        round();
                                        return rounds < 3 ? Round::Plain : Round::Changed;  // a member ended
                                      }};
    CHECK_FALSE(profiler.advance(&unit));
    CHECK(rounds == 3);
    CHECK(profiler.pack_steps() == 3);
    REQUIRE(profiler.points().size() == 1);
    CHECK(profiler.points().front().second > 0);
    CHECK(profiler.error().empty());
  }
  SECTION("the unit a K is compared with changes: both are timed on synthetic models") {
    ThroughputProfiler profiler(spec, 2, input, test_device(), {}, -1.0);
    bool changed = false;
    ThroughputProfiler::PackUnit unit{1, [&] {
                                        round();
                                        return changed ? Round::Changed : Round::Plain;
                                      }};
    CHECK(profiler.advance(&unit));
    const int before = rounds;
    changed = true;
    CHECK_FALSE(profiler.advance(&unit));
    CHECK(rounds == before + 1);  // the first of its rounds said so; none was timed after
    REQUIRE(profiler.points().size() == 2);
    CHECK(profiler.points().back().second > 0);
  }
  // Rounds longer than a window's minimum time: every window then has the same steps (on a CPU,
  // one), on a quiet machine or a loaded one. `counter` counts them; each ends as `result` says.
  const auto long_unit = [](int& counter, Round result, bool warm = false) {
    return ThroughputProfiler::PackUnit{1,
                                        [&counter, result] {
                                          std::this_thread::sleep_for(std::chrono::milliseconds(25));
                                          ++counter;
                                          return result;
                                        },
                                        warm};
  };
  // The rounds `profiler` stepped to time K = 1 on such a unit; the profile must end there.
  const auto profiled_rounds = [&](ThroughputProfiler& profiler, Round result, bool warm = false) {
    int rounds = 0;
    const auto unit = long_unit(rounds, result, warm);
    CHECK_FALSE(profiler.advance(&unit));
    return rounds;
  };
  SECTION("a window in which the pack evaluated is timed again") {
    ThroughputProfiler profiler(spec, 1, input, test_device());
    const int evaluated_rounds = profiled_rounds(profiler, Round::Reported);
    ThroughputProfiler reference(spec, 1, input, test_device());
    const int plain_rounds = profiled_rounds(reference, Round::Plain);
    // Each window was timed again, but only a few times: the profile still ends, with its point.
    // (Its windows took three times the plain profile's timed rounds: 11 against 5 on a CPU.)
    CHECK(evaluated_rounds > plain_rounds);
    CHECK(evaluated_rounds <= 3 * plain_rounds);
    CHECK(profiler.points().size() == 1);
  }
  SECTION("a warm unit (its CUDA graph captured) is timed without a warm-up") {
    ThroughputProfiler cold(spec, 1, input, test_device());
    const int cold_rounds = profiled_rounds(cold, Round::Plain);
    ThroughputProfiler warm(spec, 1, input, test_device());
    const int warm_rounds = profiled_rounds(warm, Round::Plain, /*warm=*/true);
    CHECK(warm_rounds < cold_rounds);
    CHECK(warm.pack_steps() == warm_rounds);
    if (!test_device().is_cuda()) {
      CHECK(warm_rounds == 3);  // three windows of one round
      CHECK(cold_rounds == 5);  // and two to warm up
    }
    REQUIRE(warm.points().size() == 1);
    CHECK(warm.points().front().second > 0);
  }
  SECTION("a unit larger than the profile may time is not stepped") {
    ThroughputProfiler profiler(spec, 2, input, test_device(), {}, -1.0);
    const auto unit = plain_unit(3);
    while (profiler.advance(&unit)) {
    }
    CHECK(rounds == 0);
    CHECK_FALSE(profiler.points().empty());
  }
  SECTION("a unit between two doublings is timed as a K of its own on the way") {
    ThroughputProfiler profiler(spec, 4, input, test_device(), {}, -1.0);
    const auto unit = plain_unit(3);
    CHECK(profiler.advance(&unit));  // K = 1
    CHECK(profiler.next_members() == 2);
    // How far the ladder goes depends on what the timing finds; where it goes on past 2, the
    // next K is the unit's 3, not 4.
    if (profiler.advance(&unit)) {
      CHECK(profiler.next_members() == 3);
      CHECK(rounds == 0);
      profiler.advance(&unit);
      CHECK(rounds > 0);
      CHECK(profiler.points().back().first == 3);
    }
    CHECK(profiler.done());
    CHECK(profiler.pack_steps() == rounds);
  }
}

TEST_CASE("a profile can read the pack's data (BatchStream::reader), its shape taken from the stream") {
  const InputShape input{1, 28, 28, 10};
  packtune::datasets::BatchStream pack(synthetic_split(input, 256, 16), test_device(), 3);
  ThroughputProfiler profiler(small_mlp(), 2, pack, -1.0);
  while (profiler.advance()) {
  }
  REQUIRE(profiler.points().size() == 2);
  CHECK(profiler.points().back().second > 0);
  CHECK(profiler.error().empty());
  CHECK_FALSE(profiler.cut_short());
}
