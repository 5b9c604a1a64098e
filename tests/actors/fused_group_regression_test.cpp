// FusedGroup on regression rows: squared error as the loss, val_mse and val_mae against a
// computation by hand, and fused members against the same trials alone.
#include <catch2/catch.hpp>

#include <cstring>

#include "actors/fused_group.hpp"
#include "packtune/error.hpp"
#include "test_device.hpp"

using namespace packtune;
using namespace packtune::actors;
using namespace packtune::spec;

namespace {

// y = x . w + 0.3 (and a second target, -y), with a little structure-free wobble.
datasets::Dataset linear_rows(std::uint32_t n, std::uint32_t features, std::uint32_t seed) {
  datasets::Dataset d;
  d.count = n;
  d.sample_shape = {features};
  d.x_type = datasets::ElementType::Float32;
  d.task = datasets::Task::Regression;
  d.target_size = 2;
  std::vector<float> x;
  std::uint32_t state = 12345u + seed;
  auto next = [&state] {
    state = state * 1664525u + 1013904223u;
    return static_cast<float>(state >> 8) / static_cast<float>(1u << 24) * 2 - 1;
  };
  for (std::uint32_t i = 0; i < n; ++i) {
    float y = 0.3f;
    for (std::uint32_t f = 0; f < features; ++f) {
      x.push_back(next());
      y += x.back() * static_cast<float>(f % 3) * 0.5f;
    }
    y += 0.05f * next();
    d.targets.push_back(y);
    d.targets.push_back(-y);
  }
  d.x.resize(x.size() * sizeof(float));
  std::memcpy(d.x.data(), x.data(), d.x.size());
  return d;
}

TrialSpec regression_spec(int depth, int width, double lr) {
  return parse_trial_spec({{"family", std::string("mlp")}, {"depth", std::int64_t{depth}},
                           {"width", std::int64_t{width}}, {"optimizer", std::string("sgd")},
                           {"lr", lr}, {"momentum", 0.5}, {"batch_size", std::int64_t{16}}});
}

}  // namespace

TEST_CASE("a regression member trains on squared error, fused as alone, and reports val_mse and val_mae") {
  torch::set_num_threads(1);
  datasets::BatchStream stream({linear_rows(256, 6, 1), linear_rows(64, 6, 2)}, testing::test_device(), 5);
  const auto input = input_shape(stream);
  CHECK_FALSE(input.images);
  CHECK(input.outputs == 2);
  CHECK(input.width == 6);

  // Members of unlike widths: padded in the fused group.
  const std::vector<TrialSpec> specs{regression_spec(1, 12, 0.05), regression_spec(1, 7, 0.02),
                                     regression_spec(1, 12, 0.1)};
  FusedGroup fused(specs[0], input, testing::test_device());
  std::vector<std::unique_ptr<FusedGroup>> alone;
  for (std::size_t i = 0; i < specs.size(); ++i) {
    fused.add(static_cast<tuners::TrialId>(i), specs[i], 40 + i);
    alone.push_back(std::make_unique<FusedGroup>(specs[i], input, testing::test_device()));
    alone.back()->add(static_cast<tuners::TrialId>(i), specs[i], 40 + i);
  }
  std::map<tuners::TrialId, Metrics> first;
  for (int s = 0; s < 40; ++s) {
    stream.begin_round();
    fused.train_step(stream);
    for (auto& a : alone) a->train_step(stream);
    if (s == 0) first = fused.evaluate(stream, {0, 1, 2});
  }
  const auto metrics = fused.evaluate(stream, {0, 1, 2});
  for (std::size_t i = 0; i < specs.size(); ++i) {
    INFO("member " << i);
    const auto id = static_cast<tuners::TrialId>(i);
    const auto solo = alone[i]->evaluate(stream, {id}).at(id);
    const auto& m = metrics.at(id);
    CHECK(m.count("val_accuracy") == 0);
    CHECK(m.at("val_loss") == m.at("val_mse"));
    CHECK(m.at("val_mse") == Approx(solo.at("val_mse")).epsilon(1e-4));
    CHECK(m.at("val_mae") == Approx(solo.at("val_mae")).epsilon(1e-4));
    // It learned: the error fell well below where it started.
    CHECK(m.at("val_mse") < 0.5 * first.at(id).at("val_mse"));
    const auto fused_state = fused.member_state(id);
    const auto solo_state = alone[i]->member_state(id);
    REQUIRE(fused_state.size() == solo_state.size());
    for (std::size_t t = 0; t < fused_state.size(); ++t) {
      INFO(fused_state[t].first);
      CHECK((fused_state[t].second - solo_state[t].second).abs().max().item<double>() < 1e-4);
    }
  }
}

TEST_CASE("val_mse and val_mae are the means of the squared and absolute errors over targets and examples") {
  // No hidden layer: the model is x W^T + b, so its predictions are computed here by hand.
  datasets::BatchStream stream({linear_rows(64, 3, 3), linear_rows(20, 3, 4)}, testing::test_device(), 5);
  const auto spec = regression_spec(0, 4, 0.05);
  FusedGroup group(spec, input_shape(stream), testing::test_device());
  group.add(0, spec, 9);
  for (int s = 0; s < 3; ++s) {
    stream.begin_round();
    group.train_step(stream);
  }
  torch::Tensor weight, bias;
  for (const auto& [name, tensor] : group.member_state(0)) {
    if (name.find("weight") != std::string::npos) weight = tensor.to(torch::kFloat64);
    if (name.find("bias") != std::string::npos) bias = tensor.to(torch::kFloat64);
  }
  REQUIRE(weight.defined());
  REQUIRE(bias.defined());
  const auto x = stream.validation_inputs().to(torch::kFloat64);
  const auto y = stream.validation_targets().to(torch::kFloat64);
  const auto error = x.matmul(weight.t()) + bias - y;
  const auto m = group.evaluate(stream, {0}).at(0);
  CHECK(m.at("val_mse") == Approx(error.square().mean().item<double>()).epsilon(1e-5));
  CHECK(m.at("val_mae") == Approx(error.abs().mean().item<double>()).epsilon(1e-5));
  const auto test = group.evaluate_on(0, stream.validation_inputs(), stream.validation_targets(), "test_");
  CHECK(test.at("test_mse") == Approx(m.at("val_mse")));
  CHECK(test.count("test_accuracy") == 0);
}

TEST_CASE("convolutional families refuse feature rows with one line") {
  datasets::BatchStream stream({linear_rows(32, 5, 1), linear_rows(8, 5, 2)}, torch::kCPU, 5);
  for (const char* family : {"cnn", "resnet"}) {
    auto spec = parse_trial_spec({{"family", std::string(family)}, {"batch_size", std::int64_t{8}}});
    INFO(family);
    CHECK_THROWS_WITH(FusedGroup(spec, input_shape(stream), torch::kCPU).add(0, spec, 1),
                      Catch::Contains("feature rows of 5"));
  }
}
