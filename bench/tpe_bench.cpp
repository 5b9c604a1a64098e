// How long one TPE suggestion takes with many results: N observations of a 10-parameter space
// (4 uniform, 3 loguniform, 2 randint, 1 choice), univariate and multivariate, Optuna's
// defaults otherwise (24 candidates, gamma 0.1). Optuna's own TPE slows to about 8
// suggestions per second at 1,000 trials; packtune's target is 1 ms or less.
//
//   build/bench/tpe_bench [--observations N] [--suggestions S]
//
// Prints one JSON object; docs/benchmarks.md#tpe has the figures.
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>

#include "tuners/tpe_sampler.hpp"

using namespace packtune::tuners;
using Clock = std::chrono::steady_clock;

namespace {

SearchSpace ten_parameters() {
  return SearchSpace::from_json(nlohmann::json::parse(R"({
    "u0": {"type": "uniform", "low": 0, "high": 1}, "u1": {"type": "uniform", "low": -3, "high": 3},
    "u2": {"type": "uniform", "low": 0, "high": 0.5}, "u3": {"type": "uniform", "low": 10, "high": 20},
    "l0": {"type": "loguniform", "low": 1e-5, "high": 1e-1}, "l1": {"type": "loguniform", "low": 1e-6, "high": 1e-2},
    "l2": {"type": "loguniform", "low": 16, "high": 1024},
    "i0": {"type": "randint", "low": 1, "high": 8}, "i1": {"type": "randint", "low": 0, "high": 100},
    "c0": {"type": "choice", "values": ["relu", "tanh", "gelu", "sigmoid"]}})"));
}

// A smooth function of every parameter, so the good set is a region, not noise.
double loss(const TrialConfig& c) {
  double sum = 0;
  for (const auto& [name, value] : c) {
    if (const auto* d = std::get_if<double>(&value)) sum += std::abs(std::log1p(std::abs(*d)) - 0.3);
    if (const auto* i = std::get_if<std::int64_t>(&value)) sum += 0.01 * static_cast<double>(*i % 7);
    if (const auto* s = std::get_if<std::string>(&value)) sum += *s == "gelu" ? 0 : 0.5;
  }
  return sum;
}

double ms_per_suggestion(bool multivariate, int observations, int suggestions) {
  const auto space = ten_parameters();
  TpeSampler tpe(space, Mode::Min, 1, {10, 0.1, 24, multivariate});
  std::mt19937_64 rng(2);
  for (int t = 0; t < observations; ++t) {
    const auto config = space.sample(rng);
    tpe.observe(t, config, 1.0, loss(config));
  }
  tpe.suggest(observations);  // warm-up
  const auto start = Clock::now();
  for (int s = 0; s < suggestions; ++s) {
    const auto suggestion = tpe.suggest(observations + 1 + s);
    if (suggestion.config.size() != space.params().size()) throw std::runtime_error("tpe_bench: a short config");
  }
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count() / suggestions;
}

}  // namespace

int main(int argc, char** argv) {
  int observations = 1000, suggestions = 200;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--observations")) observations = std::stoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--suggestions")) suggestions = std::stoi(argv[i + 1]);
    else {
      std::fprintf(stderr, "tpe_bench: unknown option %s\n", argv[i]);
      return 2;
    }
  }
  const double univariate = ms_per_suggestion(false, observations, suggestions);
  const double joint = ms_per_suggestion(true, observations, suggestions);
  std::printf("{\"observations\": %d, \"parameters\": 10, \"suggestions\": %d, "
              "\"univariate_ms\": %.4f, \"multivariate_ms\": %.4f}\n",
              observations, suggestions, univariate, joint);
  return 0;
}
