// Plans N trials of mixed shapes onto M actors and prints how long planning and a re-plan
// (a rung: most trials leave, a few are promoted) take. Pure logic, no device.
//   plan_bench                        the growth curve: 1k/100, 10k/1k, 100k/10k trials/actors
//   plan_bench --trials N --actors M  one size
//   --json                            one JSON object instead of text
#include <chrono>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "packing/planner.hpp"

using namespace packtune::packing;
using Clock = std::chrono::steady_clock;

namespace {

struct Figures {
  int trials = 0;
  int actors = 0;
  double plan_seconds = 0;
  double replan_seconds = 0;
  std::size_t leaving = 0;
  std::size_t arriving = 0;
  int moved = 0;
  int actors_used = 0;
  long long placed = 0;
  std::size_t unplaced = 0;
};

Figures run(int trials, int actors) {
  std::mt19937 rng(1);
  // 24 shapes: MLP-like and CNN-like, batch 32..512, SGD or Adam.
  std::vector<TrialShape> shapes;
  for (int i = 0; i < 24; ++i) {
    TrialShape s;
    s.key = "shape" + std::to_string(i);
    s.parameters = 50000 + static_cast<std::int64_t>(rng() % 2000000);
    s.largest_parameter = s.parameters / 2;
    s.activations_per_sample = 2000 + static_cast<std::int64_t>(rng() % 80000);
    s.flops_per_sample = s.parameters * 2 + s.activations_per_sample * 10;
    s.batch_size = 32 << (i % 5);
    s.optimizer_slots = i % 2 ? 2 : 1;
    s.adaptive = i % 2;
    shapes.push_back(s);
  }
  std::vector<TrialDemand> demand;
  for (int t = 0; t < trials; ++t) demand.push_back({t, shapes[rng() % shapes.size()], 100.0 + rng() % 1000});
  std::vector<ActorSpec> specs;
  for (int a = 0; a < actors; ++a) specs.push_back({a, "cuda:" + std::to_string(a % 8), std::int64_t{16} << 30, 1 << 30, 64});

  Figures f;
  f.trials = trials;
  f.actors = actors;
  Planner planner;
  auto start = Clock::now();
  auto plan = planner.plan(specs, demand);
  f.plan_seconds = std::chrono::duration<double>(Clock::now() - start).count();

  // A rung boundary: 2/3 of the trials pause, a ninth of them come back promoted.
  std::vector<std::int64_t> leaving;
  std::vector<TrialDemand> arriving;
  for (int t = 0; t < trials; ++t) {
    if (t % 3) leaving.push_back(t);
    if (t % 9 == 1) arriving.push_back({trials + t, demand[static_cast<std::size_t>(t)].shape, 300});
  }
  start = Clock::now();
  f.moved = planner.replan(plan, leaving, arriving);
  f.replan_seconds = std::chrono::duration<double>(Clock::now() - start).count();
  f.leaving = leaving.size();
  f.arriving = arriving.size();
  f.actors_used = plan.actors_used();
  for (const auto& a : plan.actors) f.placed += a.members();
  f.unplaced = plan.unplaced.size();
  return f;
}

std::string json(const Figures& f) {
  char buffer[512];
  std::snprintf(buffer, sizeof buffer,
                "{\"trials\": %d, \"actors\": %d, \"plan_seconds\": %.4f, \"replan_seconds\": %.4f, "
                "\"actors_used\": %d, \"moved\": %d, \"unplaced\": %zu}",
                f.trials, f.actors, f.plan_seconds, f.replan_seconds, f.actors_used, f.moved, f.unplaced);
  return buffer;
}

void print(const Figures& f) {
  std::printf("planned %d trials on %d actors in %.3f s; re-planned a rung (%zu leave, %zu arrive) in %.3f s, "
              "%d moved; %d actors in use, %lld trials placed, %zu waiting\n",
              f.trials, f.actors, f.plan_seconds, f.leaving, f.arriving, f.replan_seconds, f.moved, f.actors_used,
              f.placed, f.unplaced);
}

}  // namespace

int main(int argc, char** argv) {
  int trials = 0, actors = 0;
  bool as_json = false;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--trials") && i + 1 < argc) {
      trials = std::stoi(argv[++i]);
    } else if (!std::strcmp(argv[i], "--actors") && i + 1 < argc) {
      actors = std::stoi(argv[++i]);
    } else if (!std::strcmp(argv[i], "--json")) {
      as_json = true;
    } else {
      std::fprintf(stderr, "usage: plan_bench [--trials N --actors M] [--json]\n");
      return 2;
    }
  }
  if (trials > 0 || actors > 0) {
    // One size; the other figure follows the curve's ratio of 10 trials per actor.
    const auto f = run(trials > 0 ? trials : actors * 10, actors > 0 ? actors : std::max(1, trials / 10));
    if (as_json) {
      std::printf("%s\n", json(f).c_str());
    } else {
      print(f);
    }
    return 0;
  }

  // The growth curve: 10x the work per step; linear time grows 10x per step too.
  std::vector<Figures> curve;
  for (int scale : {1, 10, 100}) {
    curve.push_back(run(1000 * scale, 100 * scale));
    if (!as_json) print(curve.back());
  }
  const auto& small = curve.front();
  const auto& large = curve.back();
  const double plan_growth = large.plan_seconds / small.plan_seconds;
  const double replan_growth = large.replan_seconds / small.replan_seconds;
  if (as_json) {
    std::string sizes;
    for (const auto& f : curve) sizes += (sizes.empty() ? "" : ", ") + json(f);
    std::printf("{\"sizes\": [%s], \"work_growth\": 100, \"plan_growth\": %.1f, \"replan_growth\": %.1f}\n",
                sizes.c_str(), plan_growth, replan_growth);
  } else {
    std::printf("from %d to %d trials (100x the work): planning took %.0fx the time, re-planning %.0fx\n",
                small.trials, large.trials, plan_growth, replan_growth);
  }
  return 0;
}
