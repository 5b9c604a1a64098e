// CUDA graphs and streams change how a step is launched, never what it computes; the
// equivalence tests in fused_group_test.cpp check that on a GPU (PACKTUNE_TEST_DEVICE=cuda).
// Here: what every build must keep, the eager path for tensors off the GPU.
#include "actors/cuda_step.hpp"

#include <catch2/catch.hpp>

using namespace packtune::actors;

TEST_CASE("off the GPU a step graph runs its body eagerly at every step") {
  StepGraph graph;
  auto weight = torch::zeros({3});
  int calls = 0, cleared = 0;
  for (int step = 0; step < 6; ++step) {
    auto input = torch::full({3}, static_cast<float>(step));
    graph.run(
        {input},
        [&](const std::vector<torch::Tensor>& in) {
          ++calls;
          weight.add_(in[0]);
        },
        [&] { ++cleared; });
  }
  CHECK(calls == 6);
  CHECK(cleared == 0);
  CHECK_FALSE(graph.captured());
  CHECK(weight[0].item<float>() == 15.0f);  // 0 + 1 + ... + 5, each step its own input
}

TEST_CASE("off the GPU unit streams run every unit's step in order on the caller's stream") {
  UnitStreams streams(torch::kCPU);
  std::vector<int> order;
  streams.begin(3);
  for (int unit = 0; unit < 3; ++unit) streams.run(static_cast<std::size_t>(unit), [&, unit] { order.push_back(unit); });
  streams.end();
  CHECK(order == std::vector<int>{0, 1, 2});
  // A unit's failure reaches the caller, and the next round still runs.
  streams.begin(2);
  CHECK_THROWS(streams.run(0, [] { throw std::runtime_error("step failed"); }));
  streams.run(1, [&] { order.push_back(7); });
  streams.end();
  CHECK(order.back() == 7);
}
