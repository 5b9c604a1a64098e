// load_bench's options parsed and checked, and the usage it prints when they are not right.
#include "bench/load_bench/options.hpp"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace packtune::bench {
namespace {

[[noreturn]] void usage(const std::string& why) {
  if (!why.empty()) std::fprintf(stderr, "load_bench: %s\n", why.c_str());
  std::fprintf(stderr,
               "usage: load_bench [--actors N | --nodes N --actors-per-node M] [--trials N] [--time-scale X] [--quick] [--eta E] [--min-budget m]\n"
               "                  [--max-budget M] [--report-every B] [--objective synthetic|table:FILE]\n"
               "                  [--sampler random|tpe] [--seed S] [--heartbeat S] [--driver-quiet] [--packtune PATH]\n"
               "                  [--keep DIR] [--driver-open-files N]\n"
               "--nodes N --actors-per-node M: N simulated machines whose M actors each share one connection.\n"
               "Without options: 1,000 simulated actors, 100,000 ASHA trials (budgets 1, 3, 9 simulated seconds),\n"
               "time scale 0.25 wall seconds per simulated second. --quick: 50 actors, 1,000 trials, scale 0.02.\n");
  std::exit(2);
}

}  // namespace

Options parse_options(int argc, char** argv) {
  Options o;
  auto value = [&](int& i) -> std::string {
    if (i + 1 >= argc) usage(std::string(argv[i]) + ": missing value");
    return argv[++i];
  };
  auto number = [&](int& i, double low) {
    const std::string flag = argv[i];
    const std::string text = value(i);
    char* end = nullptr;
    const double v = std::strtod(text.c_str(), &end);
    if (end == text.c_str() || *end != '\0' || !std::isfinite(v) || v < low) {
      usage(flag + ": expected a number >= " + std::to_string(low) + ", got " + text);
    }
    return v;
  };
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--actors") {
      o.actors = static_cast<int>(number(i, 1));
    } else if (a == "--nodes") {
      o.nodes = static_cast<int>(number(i, 1));
    } else if (a == "--actors-per-node") {
      o.actors_per_node = static_cast<int>(number(i, 1));
    } else if (a == "--driver-open-files") {
      o.driver_open_files = static_cast<int>(number(i, 16));
    } else if (a == "--trials") {
      o.trials = static_cast<std::int64_t>(number(i, 1));
    } else if (a == "--time-scale") {
      o.time_scale = number(i, 1e-6);
    } else if (a == "--quick") {
      o.actors = 50;
      o.trials = 1000;
      o.time_scale = 0.02;
    } else if (a == "--eta") {
      o.eta = static_cast<int>(number(i, 2));
    } else if (a == "--min-budget") {
      o.min_budget = number(i, 1e-9);
    } else if (a == "--max-budget") {
      o.max_budget = number(i, 1e-9);
    } else if (a == "--report-every") {
      o.report_every = number(i, 0);
    } else if (a == "--objective") {
      o.objective = value(i);
    } else if (a == "--sampler") {
      o.sampler = value(i);
      if (o.sampler != "random" && o.sampler != "tpe") usage("--sampler: expected random or tpe, got " + o.sampler);
    } else if (a == "--seed") {
      o.seed = static_cast<std::uint64_t>(number(i, 0));
    } else if (a == "--heartbeat") {
      o.heartbeat_seconds = number(i, 0.1);  // the driver's floor: idle actors wake every 100 ms
    } else if (a == "--driver-quiet") {
      o.driver_quiet = true;
    } else if (a == "--packtune") {
      o.packtune = value(i);
    } else if (a == "--keep") {
      o.keep = value(i);
    } else if (a == "--help" || a == "-h") {
      usage("");
    } else {
      usage("unknown option " + a);
    }
  }
  if (o.min_budget > o.max_budget) usage("--min-budget is above --max-budget");
  if ((o.nodes > 0) != (o.actors_per_node > 0)) usage("--nodes and --actors-per-node go together");
  if (o.nodes > 0) {
    if (o.actors_per_node > 4096) usage("--actors-per-node: a node declares at most 4096 actors");
    if (static_cast<double>(o.nodes) * o.actors_per_node > 1e6) usage("--nodes times --actors-per-node: at most 1,000,000");
    if (o.driver_open_files > 0) usage("--driver-open-files measures actors over the cap, without --nodes");
    o.actors = o.nodes * o.actors_per_node;
  }
  return o;
}

}  // namespace packtune::bench
