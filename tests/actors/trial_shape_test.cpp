// The memory model against the memory training really takes: MemoryMeter counts every CPU
// tensor exactly, so the estimate must land within 15% of the measured peak of the GPU's
// path (taken on the CPU), and the CPU's own path must not need more.
// LibTorch first: its logging header defines a CHECK macro that Catch's must replace.
#include "actors/memory_meter.hpp"
#include "actors/memory_profile.hpp"

#include <catch2/catch.hpp>

#include <tuple>
#include <vector>

#include "experiment/trial_shape.hpp"
#include "packtune/error.hpp"

using namespace packtune;

namespace {

spec::TrialSpec spec_of(const std::string& family, int batch, const std::string& optimizer) {
  spec::TrialSpec s;
  s.model.family = family;
  s.model.depth = 2;
  s.model.width = family == "mlp" ? 256 : 64;
  s.model.channels = 16;
  s.model.dropout = 0.1;
  s.batch_size = batch;
  s.optimizer.name = optimizer;
  s.optimizer.momentum = 0.9;
  return s;
}

}  // namespace

TEST_CASE("the memory estimate is within 15% of the measured peak for MLPs and CNNs at batch 32 to 512") {
  torch::set_num_threads(1);
  packing::MemoryModel model;
  struct Case {
    const char* family;
    int batch;
    const char* optimizer;
    int members;
    double weight_decay = 0;
  };
  const Case cases[] = {
      {"mlp", 32, "sgd", 1},  {"mlp", 128, "adam", 1}, {"mlp", 512, "sgd", 1},  {"mlp", 512, "adamw", 1},
      {"mlp", 32, "sgd", 4},  {"mlp", 128, "adam", 4}, {"mlp", 512, "sgd", 4},  {"cnn", 32, "sgd", 1},
      {"cnn", 128, "adam", 1}, {"cnn", 512, "sgd", 1}, {"cnn", 32, "adam", 4},  {"cnn", 128, "sgd", 4},
      {"mlp", 32, "sgd", 4, 1e-4}, {"cnn", 128, "sgd", 4, 1e-4}, {"mlp", 128, "adamw", 4, 1e-2},
  };
  for (const auto& c : cases) {
    auto spec = spec_of(c.family, c.batch, c.optimizer);
    spec.optimizer.weight_decay = c.weight_decay;
    const auto estimated = model.estimate(trial_shape(spec), c.members).peak();
    // The fit is to the GPU's path (whole-tensor optimizer steps, with their temporaries),
    // measured here on the CPU; the CPU's own one-pass step needs less, never more.
    const auto measured =
        actors::measure_peak_bytes(spec, c.members, spec::InputShape{}, torch::kCPU, 2, torch::Device(torch::kCUDA));
    const auto on_cpu = actors::measure_peak_bytes(spec, c.members, spec::InputShape{}, torch::kCPU);
    const double ratio = static_cast<double>(estimated) / static_cast<double>(measured);
    INFO(c.family << " batch " << c.batch << " " << c.optimizer << " x" << c.members << " wd " << c.weight_decay << ": estimated "
                  << (estimated >> 10) << " KiB, measured " << (measured >> 10) << " KiB (the CPU's path "
                  << (on_cpu >> 10) << " KiB), ratio " << ratio);
    CHECK(ratio > 0.85);
    CHECK(ratio < 1.15);
    CHECK(on_cpu <= measured);
  }
}

TEST_CASE("with a per-trial order or augmentation the estimate counts each member's own batch") {
  // A narrow MLP at batch 512: each member's own 512 x 784 batch is about as large as the rest
  // of its member, so an estimate without the members' batches falls outside the 15%.
  torch::set_num_threads(1);
  packing::MemoryModel model;
  datasets::StreamOptions per_trial_order;
  per_trial_order.order_per_trial = true;
  datasets::StreamOptions per_trial_flips;
  per_trial_flips.augment.flip = true;
  // With flips a unit of one peaks while its batch is being flipped, which the formula leaves
  // out (docs/planner.md); fused, the members' batches outweigh that.
  // A unit of one reads one batch in either order, which the fitted terms hold already.
  const std::vector<std::tuple<datasets::StreamOptions, const char*, int>> cases = {
      {per_trial_order, "per-trial order", 1}, {per_trial_order, "per-trial order", 4},
      {per_trial_order, "per-trial order", 8}, {per_trial_flips, "per-trial flips", 4},
      {per_trial_flips, "per-trial flips", 8}};
  for (const auto& [stream, what, members] : cases) {
    auto spec = spec_of("mlp", 512, "sgd");
    spec.model.width = 32;
    spec::InputShape own;
    own.own_batches = true;
    const auto estimated = model.estimate(trial_shape(spec, own), members).peak();
    const auto shared = model.estimate(trial_shape(spec), members).peak();
    const auto measured = actors::measure_peak_bytes(spec, members, spec::InputShape{}, torch::kCPU, 2,
                                                     torch::Device(torch::kCUDA), stream);
    const double ratio = static_cast<double>(estimated) / static_cast<double>(measured);
    INFO(what << " x" << members << ": estimated " << (estimated >> 10) << " KiB (shared batches "
              << (shared >> 10) << " KiB), measured " << (measured >> 10) << " KiB, ratio " << ratio);
    if (members == 1) {
      CHECK(ratio >= 1.0);  // high by the one batch the fitted terms already hold, never low
    } else {
      CHECK(ratio > 0.85);
      CHECK(ratio < 1.15);
      CHECK(static_cast<double>(shared) / static_cast<double>(measured) < 0.85);
    }
  }
}

TEST_CASE("a memory budget turns an oversized allocation into an out-of-memory error") {
  auto& meter = actors::MemoryMeter::instance();
  const auto before = meter.current_bytes();
  {
    auto small = torch::zeros({1000});
    CHECK(meter.current_bytes() >= before + 4000);
  }
  CHECK(meter.current_bytes() == before);
  meter.set_limit(before + (8 << 20));
  try {
    auto big = torch::zeros({4 << 20});  // 16 MiB
    FAIL("the allocation should have been refused");
  } catch (const std::exception& e) {
    CHECK(actors::is_out_of_memory(e));
  }
  meter.set_limit(0);
  CHECK(meter.current_bytes() == before);
  auto big = torch::zeros({4 << 20});
  CHECK(meter.current_bytes() >= before + (16 << 20));
}
