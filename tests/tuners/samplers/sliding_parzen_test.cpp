#include <catch2/catch.hpp>

#include <cmath>
#include <iterator>
#include <map>
#include <random>
#include <vector>

#include "packtune/error.hpp"
#include "tuners/samplers/parzen_estimator.hpp"
#include "tuners/samplers/sliding_parzen.hpp"

using namespace packtune;
using namespace packtune::tuners;

namespace {

// Where a bad set's trials lie: spread over the range, crowded where a search went (with a
// few far out, whose gaps are wider than the clip), or on a handful of repeated values.
enum class Spread { Even, Crowded, Repeated };

double draw(std::mt19937_64& rng, Spread spread, const ParzenAxis& axis) {
  std::uniform_real_distribution<double> unit(0, 1);
  const double u = unit(rng), range = axis.high - axis.low;
  if (axis.categorical) return std::floor(u * u * static_cast<double>(axis.choices));
  switch (spread) {
    case Spread::Even:
      return axis.low + range * u;
    case Spread::Crowded:
      return unit(rng) < 0.02 ? axis.low + range * u : axis.low + range * (0.4 + 0.1 * u * u);
    case Spread::Repeated:
      return u < 0.05 ? (u < 0.025 ? axis.low : axis.high) : axis.low + range * std::floor(u * 7) / 7;
  }
  return axis.low;
}

// The sliding estimator against ParzenEstimator built from scratch over the same kernels, at
// random points, the range's ends and the kernels' own means.
void check_equal(const SlidingParzen& sliding, const std::map<std::int64_t, double>& kernels, const ParzenAxis& axis,
                 std::mt19937_64& rng) {
  std::vector<double> values;  // oldest (lowest id) first
  for (const auto& [id, value] : kernels) values.push_back(value);
  const ParzenEstimator exact({axis}, {values}, {});
  std::vector<double> xs;
  if (axis.categorical) {
    for (std::size_t c = 0; c < axis.choices; ++c) xs.push_back(static_cast<double>(c));
  } else {
    std::uniform_real_distribution<double> in(axis.low, axis.high);
    for (int q = 0; q < 12; ++q) xs.push_back(in(rng));
    xs.insert(xs.end(), {axis.low, axis.high, values.front(), values.back(), values[values.size() / 2]});
  }
  for (const double x : xs) {
    CAPTURE(values.size(), x, sliding.log_density(x) - exact.log_density({x}));
    CHECK(std::abs(sliding.log_density(x) - exact.log_density({x})) <= 1e-13);
  }
}

}  // namespace

TEST_CASE("a sliding estimator equals ParzenEstimator as kernels join and leave, mostly at the two ends") {
  const std::vector<ParzenAxis> axes = {{false, 0, 0.0, 1.0}, {false, 0, -9.2, -2.3}, {true, 4, 0, 0}};
  for (const auto& axis : axes) {
    for (const auto spread : {Spread::Even, Spread::Crowded, Spread::Repeated}) {
      CAPTURE(axis.categorical, axis.low, static_cast<int>(spread));
      std::mt19937_64 rng(11);
      SlidingParzen sliding(axis);
      std::map<std::int64_t, double> kernels;
      std::int64_t next = 0;  // ids 10 apart, so that older ones can join between them
      const auto join = [&](std::int64_t id) {
        kernels[id] = draw(rng, spread, axis);
        sliding.insert(id, kernels[id]);
      };
      const auto leave = [&](std::int64_t id) {
        kernels.erase(id);
        sliding.erase(id);
      };
      // Past the flat 25 into the ramp, and past the clip's 99.
      for (int i = 0; i < 150; ++i) join(next += 10);
      check_equal(sliding, kernels, axis, rng);
      // Changes as a running experiment makes them, 2,500 of them (past the rebuild after as
      // many changes as kernels), the set between 110 and about 400: mostly the newest joins
      // or the oldest leaves; now and then one leaves from anywhere (to the good set), or an
      // older one joins (from it).
      std::uniform_real_distribution<double> unit(0, 1);
      for (int step = 1; step <= 2500; ++step) {
        const double u = unit(rng);
        if (kernels.size() > 110 && u < 0.4) {
          leave(kernels.begin()->first);
        } else if (kernels.size() > 110 && u < 0.45) {
          leave(std::next(kernels.begin(), static_cast<std::ptrdiff_t>(unit(rng) * static_cast<double>(kernels.size())))->first);
        } else if (u < 0.5) {
          const std::int64_t id = 1 + static_cast<std::int64_t>(unit(rng) * static_cast<double>(next - 1));
          if (!kernels.count(id)) join(id);
        } else {
          join(next += 10);
        }
        REQUIRE(sliding.size() == kernels.size());
        if (step % 250 == 0) check_equal(sliding, kernels, axis, rng);
      }
    }
  }
}

TEST_CASE("a sliding estimator of a choice is exact at any size; of a range it refuses below the clip's 99 kernels") {
  std::mt19937_64 rng(12);
  const ParzenAxis choice{true, 3, 0, 0};
  SlidingParzen sliding(choice);
  std::map<std::int64_t, double> kernels;
  for (std::int64_t i = 0; i < 40; ++i) {
    // Every other one joins in the middle: each size from 1 to 40, both ways of joining.
    const std::int64_t id = i % 2 ? 100 - i : 100 + i;
    kernels[id] = draw(rng, Spread::Even, choice);
    sliding.insert(id, kernels[id]);
    check_equal(sliding, kernels, choice, rng);
  }
  SlidingParzen line({false, 0, 0.0, 1.0});
  for (int i = 0; i < 98; ++i) line.insert(i, 0.5);
  CHECK_THROWS_AS(line.log_density(0.5), Error);
  line.insert(98, 0.5);
  CHECK(std::isfinite(line.log_density(0.5)));
}

TEST_CASE("a sliding estimator refuses an integer axis, an empty range, a choice out of range and unknown or repeated ids") {
  CHECK_THROWS_AS(SlidingParzen({false, 0, -0.5, 8.5, true}), Error);
  CHECK_THROWS_AS(SlidingParzen({false, 0, 1.0, 1.0}), Error);
  SlidingParzen choice({true, 3, 0, 0});
  CHECK_THROWS_AS(choice.insert(1, 3), Error);
  CHECK_THROWS_AS(choice.erase(1), Error);
  choice.insert(1, 2);
  CHECK_THROWS_AS(choice.insert(1, 0), Error);
}

TEST_CASE("a sliding density below a limit is the density itself, and one that reaches it says at least the limit") {
  std::mt19937_64 rng(13);
  for (const auto& axis : {ParzenAxis{false, 0, 0.0, 1.0}, ParzenAxis{true, 4, 0, 0}}) {
    SlidingParzen sliding(axis);
    for (std::int64_t id = 0; id < 300; ++id) sliding.insert(id, draw(rng, Spread::Crowded, axis));
    std::uniform_real_distribution<double> in(axis.low, axis.high);
    for (int q = 0; q < 200; ++q) {
      const double x = axis.categorical ? static_cast<double>(q % 4) : in(rng);
      const double full = sliding.log_density(x);
      for (const double limit : {full - 1.0, full - 1e-9, full + 1e-9, full + 1.0}) {
        CAPTURE(x, full, limit);
        const double below = sliding.log_density_below(x, limit);
        if (full < limit) CHECK(below == full);
        else CHECK(below >= limit);
      }
    }
  }
}

TEST_CASE("a sliding estimator of 2,000 kernels, as a thousand results and a thousand running trials make, stays exact") {
  std::mt19937_64 rng(14);
  const ParzenAxis axis{false, 0, -9.2, -2.3};
  std::map<std::int64_t, double> kernels;
  std::int64_t next = 0;
  std::vector<std::pair<std::int64_t, double>> start;
  for (; next < 2000; ++next) start.emplace_back(next, kernels[next] = draw(rng, Spread::Crowded, axis));
  SlidingParzen sliding(axis, start, 1.0);
  check_equal(sliding, kernels, axis, rng);
  // 3,000 suggestions: each a trial that starts and the oldest result that leaves; every tenth
  // a good-set swap (a recent trial leaves, an old one comes back).
  for (int step = 1; step <= 3000; ++step) {
    kernels[next] = draw(rng, Spread::Crowded, axis);
    sliding.insert(next, kernels[next]);
    ++next;
    const auto oldest = kernels.begin()->first;
    kernels.erase(oldest);
    sliding.erase(oldest);
    if (step % 10 == 0) {
      const auto recent = std::prev(kernels.end(), 5)->first;
      kernels.erase(recent);
      sliding.erase(recent);
      const std::int64_t back = oldest - 1 - step % 7;
      if (back >= 0 && !kernels.count(back)) {
        kernels[back] = draw(rng, Spread::Crowded, axis);
        sliding.insert(back, kernels[back]);
      }
    }
    if (step % 1000 == 0) check_equal(sliding, kernels, axis, rng);
  }
}
