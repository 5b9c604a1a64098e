// What augmentation costs a pack: the seconds one round of batches takes for K members of a
// pack (batch 128 of 28 x 28 Fashion-MNIST-shaped images, as the ResNet example reads them)
// without augmentation, with crops and flips shared by the pack (made once), and drawn per
// trial (made K times), against one training step of the example's ResNet alone.
//
//   build/bench/augment_bench [--device cpu|cuda] [--rounds N]
//
// Prints one JSON object; docs/benchmarks.md#augmentation has the figures.
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>

#include <torch/cuda.h>
#include <torch/torch.h>

#include "actors/fused_group.hpp"
#include "actors/memory_profile.hpp"

using namespace packtune;
using Clock = std::chrono::steady_clock;

namespace {

// Seconds per round: K members each read their batch of the round's step.
double round_seconds(datasets::BatchStream& stream, int members, int rounds, torch::Device device) {
  auto sync = [&] {
    if (device.is_cuda()) torch::cuda::synchronize();
  };
  for (int r = 0; r < 3; ++r) {  // warm-up: the permutation, the allocator
    stream.begin_round();
    for (int k = 0; k < members; ++k) stream.batch(r, 128, 1000 + k);
  }
  sync();
  const auto start = Clock::now();
  for (int r = 0; r < rounds; ++r) {
    stream.begin_round();
    for (int k = 0; k < members; ++k) stream.batch(r, 128, 1000 + k);
  }
  sync();
  return std::chrono::duration<double>(Clock::now() - start).count() / rounds;
}

}  // namespace

int main(int argc, char** argv) {
  std::string device_name = "cpu";
  int rounds = 200;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--device")) device_name = argv[i + 1];
    if (!std::strcmp(argv[i], "--rounds")) rounds = std::stoi(argv[i + 1]);
  }
  torch::set_num_threads(1);
  const torch::Device device(device_name);
  const spec::InputShape input{1, 28, 28, 10};
  const auto split = actors::synthetic_split(input, 8192, 16);
  const datasets::Augment crops{2, true, true};
  auto shared = crops;
  shared.per_trial = false;

  std::string rows;
  for (int members : {1, 4, 16}) {
    datasets::BatchStream plain(split, device, 1, {true, {}});
    datasets::BatchStream once(split, device, 1, {true, shared});
    datasets::BatchStream each(split, device, 1, {true, crops});
    rows += std::string(rows.empty() ? "" : ",\n") + "  {\"members\": " + std::to_string(members) +
            ", \"plain_ms\": " + std::to_string(1e3 * round_seconds(plain, members, rounds, device)) +
            ", \"shared_ms\": " + std::to_string(1e3 * round_seconds(once, members, rounds, device)) +
            ", \"per_trial_ms\": " + std::to_string(1e3 * round_seconds(each, members, rounds, device)) + "}";
  }
  // The step the batches feed: the example's ResNet (3 stages of 1 block, 16 channels) alone.
  const auto spec = spec::parse_trial_spec({{"family", std::string("resnet")}, {"batch_size", std::int64_t{128}},
                                              {"optimizer", std::string("sgd")}, {"momentum", 0.9}});
  datasets::BatchStream stream(split, device, 1, {true, crops});
  actors::FusedGroup group(spec, actors::input_shape(stream), device);
  group.add(0, spec, 7);
  for (int s = 0; s < 3; ++s) {
    stream.begin_round();
    group.train_step(stream);
  }
  const int steps = 20;
  const auto start = Clock::now();
  for (int s = 0; s < steps; ++s) {
    stream.begin_round();
    group.train_step(stream);
  }
  if (device.is_cuda()) torch::cuda::synchronize();
  const double step_ms = 1e3 * std::chrono::duration<double>(Clock::now() - start).count() / steps;
  std::printf("{\"device\": \"%s\", \"rounds\": %d, \"resnet_step_ms\": %.3f, \"rounds_by_members\": [\n%s\n]}\n",
              device_name.c_str(), rounds, step_ms, rows.c_str());
}
