#include <catch2/catch.hpp>

#include "actors/autocast.hpp"
#include "actors/fused_group.hpp"
#include "synthetic_data.hpp"

using namespace packtune;
using namespace packtune::actors;
using namespace packtune::spec;

namespace {

// Sets the process's training precision for one test and puts fp32 back after it.
struct PrecisionScope {
  explicit PrecisionScope(Precision p) { set_training_precision(p, /*on_cpu_too=*/true); }
  ~PrecisionScope() { set_training_precision(Precision::Fp32); }
};

// A fused unit of two CNN members trained `steps` steps; their parameters and metrics after.
struct Trained {
  std::vector<std::pair<std::string, torch::Tensor>> state;
  std::map<tuners::TrialId, Metrics> metrics;
};

Trained train(int steps) {
  const auto split = testing::synthetic_split(160, 40);
  datasets::BatchStream stream(split, torch::kCPU, 11);
  tuners::TrialConfig config{{"family", std::string("cnn")}, {"depth", std::int64_t{2}},
                             {"channels", std::int64_t{3}}, {"width", std::int64_t{12}},
                             {"batch_size", std::int64_t{8}}, {"lr", 0.05}};
  const auto spec = parse_trial_spec(config);
  FusedGroup group(spec, InputShape{1, 10, 10, 10}, torch::kCPU);
  group.add(0, spec, 500);
  group.add(1, spec, 501);
  for (int s = 0; s < steps; ++s) {
    stream.begin_round();
    group.train_step(stream);
  }
  return {group.member_state(0), group.evaluate(stream, {0, 1})};
}

}  // namespace

TEST_CASE("under bf16 a fused unit's products run in bfloat16, and its weights, losses and steps stay float32") {
  torch::set_num_threads(1);
  const auto fp32 = train(6);
  Trained bf16;
  {
    PrecisionScope scope(Precision::Bf16);  // LibTorch's CPU autocast: the GPU's path, here
    bf16 = train(6);
  }
  double largest_difference = 0;
  for (std::size_t i = 0; i < fp32.state.size(); ++i) {
    const auto& [name, tensor] = bf16.state[i];
    INFO(name);
    if (tensor.is_floating_point()) CHECK(tensor.scalar_type() == torch::kFloat32);
    CHECK(torch::isfinite(tensor.to(torch::kFloat64)).all().item<bool>());
    const auto diff = (tensor.to(torch::kFloat64) - fp32.state[i].second.to(torch::kFloat64)).abs().max();
    largest_difference = std::max(largest_difference, diff.item<double>());
  }
  // bfloat16's 8-bit mantissa moved the weights: autocast did run the products.
  CHECK(largest_difference > 1e-6);
  for (const auto& [trial, m] : bf16.metrics) {
    INFO("trial " << trial);
    CHECK(std::isfinite(m.at("val_loss")));
    CHECK(std::isfinite(m.at("train_loss")));
    // Close to fp32's: the same training, rounded more coarsely.
    CHECK(m.at("val_loss") == Approx(fp32.metrics.at(trial).at("val_loss")).epsilon(0.05));
  }
}

TEST_CASE("outside bf16 the Autocast scope does nothing, and inside it nests and restores") {
  const auto x = torch::randn({4, 8}), w = torch::randn({8, 3});
  {
    PrecisionScope scope(Precision::Tf32);
    Autocast autocast(torch::kCPU);
    CHECK_FALSE(autocast.active());
    CHECK(torch::mm(x, w).scalar_type() == torch::kFloat32);
  }
  PrecisionScope scope(Precision::Bf16);
  {
    Autocast outer(torch::kCPU);
    CHECK(outer.active());
    {
      Autocast inner(torch::kCPU);
      CHECK(torch::mm(x, w).scalar_type() == torch::kBFloat16);
    }
    CHECK(torch::mm(x, w).scalar_type() == torch::kBFloat16);  // the inner scope left it on
  }
  CHECK(torch::mm(x, w).scalar_type() == torch::kFloat32);
}

TEST_CASE("bf16 autocasts a CPU's tensors only when asked to (a GPU actor's calibration there stays float32)") {
  const auto x = torch::randn({4, 8}), w = torch::randn({8, 3});
  set_training_precision(Precision::Bf16);
  {
    Autocast autocast(torch::kCPU);
    CHECK_FALSE(autocast.active());
    CHECK(torch::mm(x, w).scalar_type() == torch::kFloat32);
  }
  set_training_precision(Precision::Fp32);
}

TEST_CASE("use_precision resolves the run's precision on the actor's device") {
  CHECK(use_precision(Precision::Auto, "cpu") == Precision::Fp32);
  CHECK(training_precision() == Precision::Fp32);
  CHECK(use_precision(Precision::Tf32, "cpu") == Precision::Fp32);  // a CPU has no TF32 units
  CHECK_THROWS_WITH(use_precision(Precision::Bf16, "cpu"), Catch::Contains("precision bf16 is for GPUs"));
  CHECK(training_precision() == Precision::Fp32);  // a refusal changes nothing
}
