#include <catch2/catch.hpp>

#include <cmath>
#include <random>
#include <vector>

#include "packtune/error.hpp"
#include "tuners/samplers/gauss_boxes.hpp"
#include "tuners/samplers/parzen_estimator.hpp"

using namespace packtune;
using namespace packtune::tuners;

namespace {

struct Kernel {
  double mu, w;
};

// The reference: every kernel's term, summed directly.
double direct(const std::vector<Kernel>& kernels, double h, double x) {
  double sum = 0;
  for (const auto& k : kernels) {
    const double z = (x - k.mu) / h;
    sum += k.w * std::exp(-0.5 * z * z);
  }
  return sum;
}

// 2,000 kernels as TPE's bad set has them: spread, or crowded where the search went, with the
// recency ramp's weights.
std::vector<Kernel> kernels(std::mt19937_64& rng, bool crowded, double low, double high) {
  std::vector<Kernel> out;
  std::uniform_real_distribution<double> unit(0, 1);
  for (int i = 0; i < 2000; ++i) {
    const double u = unit(rng);
    const double mu = crowded ? low + (high - low) * (0.4 + 0.2 * u * u) : low + (high - low) * u;
    out.push_back({mu, 1.0 / 2000 + (1 - 1.0 / 2000) * i / 1999.0});
  }
  return out;
}

}  // namespace

TEST_CASE("gauss boxes sum as the kernels do, to 1e-13 relative and 1e-15 of the weights, spread or crowded") {
  std::mt19937_64 rng(7);
  for (const bool crowded : {false, true}) {
    for (const auto& [low, high] : {std::pair{0.0, 1.0}, std::pair{-9.2, -2.3}}) {
      const double h = (high - low) / 100;  // TPE's clip past 100 kernels
      const auto ks = kernels(rng, crowded, low, high);
      GaussBoxes boxes(low, high, h);
      double weights = 0;
      for (const auto& k : ks) {
        boxes.add(k.mu, k.w);
        weights += k.w;
      }
      for (int q = 0; q < 400; ++q) {
        const double x = low + (high - low) * std::uniform_real_distribution<double>(0, 1)(rng);
        const double want = direct(ks, h, x);
        CAPTURE(crowded, low, x, want);
        CHECK(std::abs(boxes.sum(x) - want) <= 1e-13 * want + 1e-15 * weights);
      }
      // At the range's ends and on a box's edge.
      for (const double x : {low, high, low + 37 * h}) CHECK(boxes.sum(x) == Approx(direct(ks, h, x)).epsilon(1e-12));
    }
  }
}

TEST_CASE("gauss boxes follow kernels that leave: the sum of those that stay, an emptied box exactly nothing") {
  std::mt19937_64 rng(8);
  const double low = 0, high = 1, h = 0.01;
  auto ks = kernels(rng, true, low, high);
  GaussBoxes boxes(low, high, h);
  for (const auto& k : ks) boxes.add(k.mu, k.w);
  // The oldest half leaves, as the cap drops results; then a kernel joins far from the rest.
  for (std::size_t i = 0; i < 1000; ++i) boxes.remove(ks[i].mu, ks[i].w);
  ks.erase(ks.begin(), ks.begin() + 1000);
  ks.push_back({0.95, 1.0});
  boxes.add(0.95, 1.0);
  for (const double x : {0.41, 0.45, 0.5, 0.55, 0.6, 0.9, 0.95}) {
    CAPTURE(x);
    CHECK(boxes.sum(x) == Approx(direct(ks, h, x)).epsilon(1e-12));
  }
  boxes.remove(0.95, 1.0);
  ks.pop_back();
  CHECK(boxes.sum(0.99) == direct({}, h, 0.99));  // its box cleared: 0, no rounding left
  CHECK(boxes.sum(0.5) == Approx(direct(ks, h, 0.5)).epsilon(1e-12));
}

TEST_CASE("gauss boxes refuse an empty range or a bandwidth that is not positive") {
  CHECK_THROWS_AS(GaussBoxes(1, 1, 0.1), Error);
  CHECK_THROWS_AS(GaussBoxes(0, 1, 0), Error);
}

// The mapping the sampler will use: a bad-set estimator of one continuous axis, past 100
// kernels, is its clipped kernels in boxes (each weighted by its normalised weight over its
// mass inside the range) plus the prior and any wider kernel summed exactly.
TEST_CASE("a bad-set estimator's density through boxes equals ParzenEstimator's") {
  std::mt19937_64 rng(9);
  for (const bool crowded : {false, true}) {
    const ParzenAxis axis{false, 0, -9.2, -2.3};
    std::vector<double> column;
    for (const auto& k : kernels(rng, crowded, axis.low, axis.high)) column.push_back(k.mu);
    const ParzenEstimator g({axis}, {column}, {});
    const auto& mu = g.means(0);
    const auto& sigma = g.bandwidths(0);
    const double range = axis.high - axis.low, h = range / 100;
    GaussBoxes boxes(axis.low, axis.high, h);
    std::vector<std::size_t> exact;
    const double root_two_pi = std::sqrt(2 * M_PI);
    const auto mass = [&](double m, double s) {
      return 0.5 * (std::erfc(-(axis.high - m) / s / std::sqrt(2.0)) - std::erfc(-(axis.low - m) / s / std::sqrt(2.0)));
    };
    for (std::size_t k = 0; k < g.kernels(); ++k) {
      if (k + 1 < g.kernels() && sigma[k] == h) {
        boxes.add(mu[k], std::exp(g.log_weights()[k]) / (mass(mu[k], h) * h * root_two_pi));
      } else {
        exact.push_back(k);  // the prior, and kernels in a gap wider than the clip
      }
    }
    CAPTURE(crowded, exact.size());
    CHECK(exact.size() < 20);
    for (const auto& x : g.sample(rng, 200)) {
      double density = boxes.sum(x[0]);
      for (const auto k : exact) {
        const double z = (x[0] - mu[k]) / sigma[k];
        density += std::exp(g.log_weights()[k] - 0.5 * z * z) / (mass(mu[k], sigma[k]) * sigma[k] * root_two_pi);
      }
      CHECK(std::abs(std::log(density) - g.log_density(x)) <= 1e-12);
    }
  }
}
