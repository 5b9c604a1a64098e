// How long one TPE suggestion takes with many results: N observations of a 10-parameter space
// (4 uniform, 3 loguniform, 2 randint, 1 choice), univariate and multivariate, Optuna's
// defaults otherwise (24 candidates, gamma 0.1). Optuna's own TPE slows to about 8
// suggestions per second at 1,000 trials; packtune's target is 1 ms or less.
//
// Two ways: `*_ms`, suggestions one after another with no result between them (the sampler
// may reuse its estimators), and `*_fresh_ms`, a new result before each suggestion (as in a
// running experiment, where most suggestions follow a result: the estimators are rebuilt).
// Each figure is wall time; `*_cpu_ms` beside it is the thread's CPU time, steadier on a
// shared machine.
//
//   build/bench/tpe_bench [--observations N] [--suggestions S]
//
// Prints one JSON object; docs/benchmarks.md#tpe has the figures.
#include <chrono>
#include <ctime>
#include <cstdio>
#include <cstring>
#include <string>

#include "tuners/samplers/tpe_sampler.hpp"

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

double thread_cpu_ms() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return 1e3 * static_cast<double>(t.tv_sec) + 1e-6 * static_cast<double>(t.tv_nsec);
}

struct Figure {
  double wall_ms = 0, cpu_ms = 0;  // per suggestion
};

Figure ms_per_suggestion(bool multivariate, bool fresh, int observations, int suggestions) {
  const auto space = ten_parameters();
  TpeSampler tpe(space, Mode::Min, 1, {10, 0.1, 24, multivariate});
  std::mt19937_64 rng(2);
  for (int t = 0; t < observations; ++t) {
    const auto config = space.sample(rng);
    tpe.observe(t, config, 1.0, loss(config));
  }
  tpe.suggest(observations);  // warm-up
  const auto start = Clock::now();
  const double cpu_start = thread_cpu_ms();
  for (int s = 0; s < suggestions; ++s) {
    const TrialId id = observations + 1 + s;
    const auto suggestion = tpe.suggest(id);
    if (suggestion.config.size() != space.params().size()) throw std::runtime_error("tpe_bench: a short config");
    // The suggested trial's result: the bad set grows by one (the good set rarely changes).
    if (fresh) tpe.observe(id, suggestion.config, 1.0, loss(suggestion.config));
  }
  return {std::chrono::duration<double, std::milli>(Clock::now() - start).count() / suggestions,
          (thread_cpu_ms() - cpu_start) / suggestions};
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
  std::printf("{\"observations\": %d, \"parameters\": 10, \"suggestions\": %d", observations, suggestions);
  for (const bool fresh : {false, true}) {
    for (const bool multivariate : {false, true}) {
      const auto f = ms_per_suggestion(multivariate, fresh, observations, suggestions);
      const char* name = multivariate ? "multivariate" : "univariate";
      const char* way = fresh ? "_fresh" : "";
      std::printf(", \"%s%s_ms\": %.4f, \"%s%s_cpu_ms\": %.4f", name, way, f.wall_ms, name, way, f.cpu_ms);
    }
  }
  std::printf("}\n");
  return 0;
}
