// Plans N trials of mixed shapes onto M actors and prints how long planning and a re-plan
// (a rung: most trials leave, a few are promoted) take. Pure logic, no device.
//   plan_bench [--trials N] [--actors M] [--json]
#include <chrono>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "packing/planner.hpp"

using namespace packtune::packing;
using Clock = std::chrono::steady_clock;

int main(int argc, char** argv) {
  int trials = 10000, actors = 1000;
  bool json = false;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--trials") && i + 1 < argc) {
      trials = std::stoi(argv[++i]);
    } else if (!std::strcmp(argv[i], "--actors") && i + 1 < argc) {
      actors = std::stoi(argv[++i]);
    } else if (!std::strcmp(argv[i], "--json")) {
      json = true;
    } else {
      std::fprintf(stderr, "usage: plan_bench [--trials N] [--actors M] [--json]\n");
      return 2;
    }
  }
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

  Planner planner;
  auto start = Clock::now();
  auto plan = planner.plan(specs, demand);
  const double plan_seconds = std::chrono::duration<double>(Clock::now() - start).count();

  // A rung boundary: 2/3 of the trials pause, a ninth of them come back promoted.
  std::vector<std::int64_t> leaving;
  std::vector<TrialDemand> arriving;
  for (int t = 0; t < trials; ++t) {
    if (t % 3) leaving.push_back(t);
    if (t % 9 == 1) arriving.push_back({trials + t, demand[static_cast<std::size_t>(t)].shape, 300});
  }
  start = Clock::now();
  const int moved = planner.replan(plan, leaving, arriving);
  const double replan_seconds = std::chrono::duration<double>(Clock::now() - start).count();

  std::int64_t placed = 0;
  for (const auto& a : plan.actors) placed += a.members();
  if (json) {
    std::printf("{\"trials\": %d, \"actors\": %d, \"plan_seconds\": %.4f, \"replan_seconds\": %.4f, "
                "\"actors_used\": %d, \"moved\": %d, \"unplaced\": %zu}\n",
                trials, actors, plan_seconds, replan_seconds, plan.actors_used(), moved, plan.unplaced.size());
  } else {
    std::printf("planned %d trials on %d actors in %.3f s; re-planned a rung (%zu leave, %zu arrive) in %.3f s, "
                "%d moved; %d actors in use, %lld trials placed, %zu waiting\n",
                trials, actors, plan_seconds, leaving.size(), arriving.size(), replan_seconds, moved,
                plan.actors_used(), static_cast<long long>(placed), plan.unplaced.size());
  }
  return 0;
}
