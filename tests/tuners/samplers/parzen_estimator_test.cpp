// The Parzen estimator against tests/tuners/samplers/parzen_reference.py, a numpy transcription of
// Optuna's estimator: weights, means, bandwidths and log densities, univariate and joint.
#include <catch2/catch.hpp>

#include <cstdio>
#include <fstream>
#include <random>

#include "../../temp_dir.hpp"
#include "tuners/samplers/parzen_estimator.hpp"

using namespace packtune::tuners;
using nlohmann::json;

namespace {

json reference(const std::vector<ParzenAxis>& axes, const std::vector<std::vector<double>>& points,
               bool multivariate, const std::vector<std::vector<double>>& queries) {
  packtune::testing::TempDir dir;
  json in = {{"axes", json::array()}, {"points", points}, {"multivariate", multivariate}, {"queries", queries}};
  for (const auto& a : axes) {
    in["axes"].push_back({{"categorical", a.categorical}, {"choices", a.choices}, {"low", a.low}, {"high", a.high},
                          {"discrete", a.discrete}});
  }
  const auto path = dir.file("in.json");
  std::ofstream(path) << in.dump();
  const std::string command = std::string(PACKTUNE_REFERENCE_PYTHON) + " " + PACKTUNE_PARZEN_REFERENCE + " " + path;
  FILE* pipe = popen(command.c_str(), "r");
  REQUIRE(pipe);
  std::string out;
  char buffer[4096];
  while (auto n = fread(buffer, 1, sizeof buffer, pipe)) out.append(buffer, n);
  REQUIRE(pclose(pipe) == 0);
  return json::parse(out);
}

// `extra` queries are scored besides 20 draws from the estimator and the first point.
void check_against_reference(const std::vector<ParzenAxis>& axes, const std::vector<std::vector<double>>& points,
                             bool multivariate, const std::vector<std::vector<double>>& extra = {}) {
  std::mt19937_64 rng(3);
  std::vector<std::vector<double>> columns(axes.size());
  for (const auto& p : points) {
    for (std::size_t a = 0; a < axes.size(); ++a) columns[a].push_back(p[a]);
  }
  const ParzenEstimator estimator(axes, columns, {1.0, multivariate});
  auto queries = estimator.sample(rng, 20);
  queries.push_back(points.empty() ? queries.front() : points.front());
  queries.insert(queries.end(), extra.begin(), extra.end());
  const auto want = reference(axes, points, multivariate, queries);

  REQUIRE(estimator.kernels() == points.size() + 1);
  for (std::size_t k = 0; k < estimator.kernels(); ++k) {
    CHECK(estimator.log_weights()[k] == Approx(want["log_weights"][k].get<double>()).epsilon(1e-12));
  }
  for (std::size_t a = 0; a < axes.size(); ++a) {
    if (axes[a].categorical) continue;
    for (std::size_t k = 0; k < estimator.kernels(); ++k) {
      CAPTURE(a, k);
      CHECK(estimator.means(a)[k] == Approx(want["means"][a][k].get<double>()).epsilon(1e-12));
      CHECK(estimator.bandwidths(a)[k] == Approx(want["sigmas"][a][k].get<double>()).epsilon(1e-12));
    }
  }
  for (std::size_t q = 0; q < queries.size(); ++q) {
    CAPTURE(q);
    CHECK(estimator.log_density(queries[q]) == Approx(want["log_density"][q].get<double>()).epsilon(1e-9).margin(1e-9));
  }
}

}  // namespace

TEST_CASE("recency weights: flat up to 25 observations, then a ramp from 1/n for the oldest") {
  CHECK(recency_weights(0).empty());
  CHECK(recency_weights(24) == std::vector<double>(24, 1.0));
  const auto w = recency_weights(30);
  REQUIRE(w.size() == 30);
  CHECK(w[0] == Approx(1.0 / 30));
  CHECK(w[4] == Approx(1.0));
  CHECK(w[2] == Approx(1.0 / 30 + (1 - 1.0 / 30) * 0.5));
  CHECK(w[29] == 1.0);
}

TEST_CASE("a univariate estimator equals the reference: bandwidths from neighbour gaps, clipped") {
  const ParzenAxis axis{false, 0, -2.0, 3.0};
  SECTION("no observation: the prior alone") { check_against_reference({axis}, {}, false); }
  SECTION("one observation") { check_against_reference({axis}, {{0.5}}, false); }
  SECTION("a few, with a tie and one at an end") {
    check_against_reference({axis}, {{0.5}, {-2.0}, {2.9}, {0.5}, {1.0}, {-1.3}, {0.51}}, false);
  }
  SECTION("40 observations: recency ramp and the magic clip") {
    std::mt19937_64 rng(7);
    std::vector<std::vector<double>> points;
    for (int i = 0; i < 40; ++i) points.push_back({-2.0 + 5.0 * unit_draw(rng) * unit_draw(rng)});
    check_against_reference({axis}, points, false);
  }
}

TEST_CASE("a categorical estimator equals the reference, and Optuna's kernels sharpen with n") {
  const ParzenAxis axis{true, 4, 0, 0};
  check_against_reference({axis}, {{0}, {2}, {2}, {3}, {2}}, false);
  // Five results of four choices: each kernel row is 1/6 everywhere plus 1 on its choice,
  // normalised: 0.7 on the observed choice, 0.1 on each other (Optuna's figures).
  const ParzenEstimator one({axis}, {{0, 1, 2, 3, 0}}, {});
  const ParzenEstimator only_first({axis}, {{0}}, {});
  std::mt19937_64 rng(1);
  int zeros = 0;
  for (const auto& x : one.sample(rng, 6000)) zeros += x[0] == 0 ? 1 : 0;
  // Choice 0: kernels 0 and 4 (weight 1/6 each) give 0.7, the other three 0.1, the prior 0.25.
  const double want = (2 * 0.7 + 3 * 0.1 + 0.25) / 6;
  CHECK(std::exp(one.log_density({0.0})) == Approx(want).epsilon(1e-12));
  CHECK(zeros == Approx(6000 * want).margin(6000 * 0.03));
  // One result: (1 + 1/2) / (1 + 4/2) = 0.5 on its choice.
  CHECK(std::exp(only_first.log_density({0.0})) == Approx((0.5 + 0.25) / 2).epsilon(1e-12));
}

TEST_CASE("an integer axis is scored by each integer's cell, and equals the reference") {
  ParzenAxis axis{false, 0, 0.5, 6.5};
  axis.discrete = true;
  check_against_reference({axis}, {{1}, {3}, {3}, {6}, {2}}, false);
  const ParzenEstimator estimator({axis}, {{1, 3, 3, 6, 2}}, {});
  std::mt19937_64 rng(2);
  double total = 0;
  for (int v = 1; v <= 6; ++v) total += std::exp(estimator.log_density({static_cast<double>(v)}));
  CHECK(total == Approx(1.0).epsilon(1e-9));  // a probability over the six integers
  for (const auto& x : estimator.sample(rng, 200)) CHECK(x[0] == std::round(x[0]));
}

TEST_CASE("a range of width 0 (a loguniform whose ends round together) adds nothing") {
  const ParzenAxis flat{false, 0, 2.0, 2.0};
  check_against_reference({flat, {false, 0, 0.0, 1.0}}, {{2.0, 0.3}, {2.0, 0.4}}, false);
  const ParzenEstimator estimator({flat}, {{2.0, 2.0}}, {});
  std::mt19937_64 rng(3);
  CHECK(estimator.sample(rng, 1)[0][0] == 2.0);
  CHECK(std::isfinite(estimator.log_density({2.0})));
}

TEST_CASE("a joint estimator equals the reference: Scott's bandwidth, product kernels") {
  const std::vector<ParzenAxis> axes{{false, 0, 0.0, 1.0}, {true, 3, 0, 0}, {false, 0, -9.2, -2.3}};
  std::mt19937_64 rng(11);
  std::vector<std::vector<double>> points;
  for (int i = 0; i < 30; ++i) {
    points.push_back({unit_draw(rng), static_cast<double>(rng() % 3), -9.2 + 6.9 * unit_draw(rng)});
  }
  check_against_reference(axes, points, true);
}

// With many kernels, log_density leaves out those too far from x to change the result (a
// univariate estimator skips whole blocks of them): these compare it, at points inside dense
// clusters, between them and at the range's ends, with the reference's sum over every kernel.
TEST_CASE("with 1,000 observations the densities still equal the reference: what is skipped cannot count") {
  std::mt19937_64 rng(21);
  SECTION("continuous: a tight cluster, a loose one and outliers") {
    const ParzenAxis axis{false, 0, -2.0, 3.0};
    std::vector<std::vector<double>> points;
    for (int i = 0; i < 1000; ++i) {
      const double u = unit_draw(rng);
      points.push_back({i % 3 == 0 ? 0.3 + 0.001 * u : i % 3 == 1 ? 1.5 + 0.5 * u : -2.0 + 5.0 * u * u * u});
    }
    check_against_reference({axis}, points, false, {{-2.0}, {3.0}, {0.3}, {0.2}, {0.9}, {2.99}, {-1.5}});
  }
  SECTION("integers: ties everywhere, two widths of range") {
    for (const double high : {8.5, 100.5}) {
      ParzenAxis axis{false, 0, 0.5, high};
      axis.discrete = true;
      std::vector<std::vector<double>> points;
      for (int i = 0; i < 1000; ++i) {
        const double u = unit_draw(rng);
        points.push_back({std::round(0.5 + (high - 1.0) * (i % 2 == 0 ? u * u : 0.5 + 0.05 * u))});
      }
      check_against_reference({axis}, points, false, {{1.0}, {high - 0.5}, {std::round(high / 2)}});
    }
  }
  SECTION("a choice") {
    std::vector<std::vector<double>> points;
    for (int i = 0; i < 1000; ++i) points.push_back({static_cast<double>(rng() % 7 == 0 ? 3 : rng() % 3)});
    check_against_reference({{true, 4, 0, 0}}, points, false, {{0.0}, {1.0}, {2.0}, {3.0}});
  }
  SECTION("joint, with an integer and a choice") {
    ParzenAxis integer{false, 0, 0.5, 20.5};
    integer.discrete = true;
    const std::vector<ParzenAxis> axes{{false, 0, 0.0, 1.0}, integer, {true, 3, 0, 0}, {false, 0, -9.2, -2.3}};
    std::vector<std::vector<double>> points;
    for (int i = 0; i < 600; ++i) {
      points.push_back({unit_draw(rng) * unit_draw(rng), std::round(1 + 19 * unit_draw(rng)),
                        static_cast<double>(rng() % 3), -9.2 + 6.9 * unit_draw(rng)});
    }
    check_against_reference(axes, points, true, {{1.0, 20.0, 2.0, -2.3}, {0.0, 1.0, 0.0, -9.2}});
  }
}

TEST_CASE("log_density_below: the density itself below the limit, at least the limit above it") {
  std::mt19937_64 rng(4);
  ParzenAxis integer{false, 0, 0.5, 30.5};
  integer.discrete = true;
  for (const auto& axis : {ParzenAxis{false, 0, 0.0, 1.0}, integer}) {
    std::vector<double> column;
    for (int i = 0; i < 1000; ++i) {
      const double u = 0.45 + 0.1 * unit_draw(rng) * unit_draw(rng);  // crowded, as TPE's own draws are
      column.push_back(axis.discrete ? std::round(0.5 + 30 * u) : u);
    }
    const ParzenEstimator estimator({axis}, {column}, {});
    for (const auto& x : estimator.sample(rng, 30)) {
      const double full = estimator.log_density(x);
      for (const double offset : {-3.0, -0.5, -1e-6, 1e-6, 0.5, 3.0}) {
        CAPTURE(axis.discrete, x[0], offset);
        const double bounded = estimator.log_density_below(x, full + offset);
        if (offset > 0) CHECK(bounded == full);  // summed in full: the same double
        else CHECK(bounded >= full + offset);
      }
    }
  }
}

TEST_CASE("draws stay in range and follow the kernels: a tight cluster draws near it") {
  const ParzenAxis axis{false, 0, 0.0, 1.0};
  const ParzenEstimator estimator({axis}, {std::vector<double>(24, 0.8)}, {});
  std::mt19937_64 rng(5);
  int near = 0;
  for (const auto& x : estimator.sample(rng, 1000)) {
    REQUIRE(x[0] >= 0.0);
    REQUIRE(x[0] <= 1.0);
    near += std::abs(x[0] - 0.8) < 0.05 ? 1 : 0;
  }
  // 24 of 25 kernels sit at 0.8 with bandwidth 1/26 (the clip): most draws land within 0.05.
  CHECK(near > 700);
}

TEST_CASE("parameters map to the estimator's coordinates and back") {
  ParamSpec lr{"lr", ParamSpec::Kind::LogUniform, 1e-4, 1e-1, {}};
  CHECK(parzen_axis(lr).low == Approx(std::log(1e-4)));
  CHECK(std::get<double>(from_axis(lr, to_axis(lr, 0.01))) == Approx(0.01));
  ParamSpec depth{"depth", ParamSpec::Kind::RandInt, 1, 3, {}};
  CHECK(parzen_axis(depth).low == 0.5);
  CHECK(parzen_axis(depth).high == 3.5);
  CHECK(std::get<std::int64_t>(from_axis(depth, 3.49)) == 3);
  CHECK(std::get<std::int64_t>(from_axis(depth, 0.5)) == 1);
  ParamSpec opt{"opt", ParamSpec::Kind::Choice, 0, 0, {std::string("sgd"), std::string("adam")}};
  CHECK(to_axis(opt, std::string("adam")) == 1.0);
  CHECK(std::get<std::string>(from_axis(opt, 0.0)) == "sgd");
}
