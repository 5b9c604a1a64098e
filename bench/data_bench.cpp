// What a run spends on its data before it trains, with no LibTorch: the driver's check of the
// whole data set (check_data, before it listens) and an actor's read of its splits (load_split
// and load_test_set, before it says it is ready). Medians of several runs each, interleaved so
// that a change in the machine's speed falls on both alike.
//
//   build/bench/data_bench [--dir DIR] [--runs N]
//
// DIR holds Fashion-MNIST's IDX files (default: the data set's usual place, or PACKTUNE_DATA_DIR).
// Prints one JSON object; docs/benchmarks.md ("data_bench") has the figures.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "datasets/data_options.hpp"
#include "datasets/data_source.hpp"
#include "packtune/error.hpp"

using namespace packtune;
using Clock = std::chrono::steady_clock;

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

template <class F>
double seconds(F f) {
  const auto start = Clock::now();
  f();
  return std::chrono::duration<double>(Clock::now() - start).count();
}

}  // namespace

int main(int argc, char** argv) {
  datasets::DataOptions options;
  options.name = "fashion-mnist";
  if (const char* dir = std::getenv("PACKTUNE_DATA_DIR"); dir != nullptr && *dir != '\0') options.dir = dir;
  int runs = 5;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--dir" && i + 1 < argc) {
      options.dir = argv[++i];
    } else if (arg == "--runs" && i + 1 < argc) {
      runs = std::atoi(argv[++i]);
    } else {
      std::fprintf(stderr, "data_bench: error: unknown argument %s; usage: data_bench [--dir DIR] [--runs N]\n",
                   argv[i]);
      return 2;
    }
  }
  if (runs < 1) {
    std::fprintf(stderr, "data_bench: error: --runs must be at least 1\n");
    return 2;
  }
  try {
    std::vector<double> check, load;
    std::size_t examples = 0;
    for (int r = 0; r < runs; ++r) {
      check.push_back(seconds([&] { datasets::check_data(options); }));
      load.push_back(seconds([&] {
        const auto split = datasets::load_split(options);
        const auto test = datasets::load_test_set(options);
        examples = split.train.count + split.validation.count + (test ? test->count : 0);
      }));
    }
    std::printf("{\"data\": \"%s\", \"runs\": %d, \"examples\": %zu, \"check_seconds\": %.4f, "
                "\"load_seconds\": %.4f}\n",
                datasets::data_files(options).front().c_str(), runs, examples, median(check), median(load));
  } catch (const Error& e) {
    std::fprintf(stderr, "data_bench: error: %s\n", e.what());
    return 2;
  }
  return 0;
}
