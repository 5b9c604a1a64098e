#include "layer_check.hpp"
#include "layers/activation.hpp"
#include "layers/layer_norm.hpp"
#include "layers/linear.hpp"
#include "layers/sequential.hpp"

using namespace packtune;
using namespace packtune::testing;

namespace {

Member sequential_member(std::uint64_t seed, std::int64_t in, std::int64_t hidden, std::int64_t out) {
  return make_member(
      seed,
      [&] {
        // One after the other: the order in which a call's arguments are built is unspecified.
        torch::nn::Linear first(in, hidden);
        torch::nn::Linear second(hidden, out);
        return torch::nn::Sequential(first, torch::nn::Tanh(), second);
      },
      [&] {
        auto model = std::make_shared<layers::Sequential>();
        model->emplace<layers::Linear>(in, hidden);
        model->emplace<layers::Activation>("tanh");
        model->emplace<layers::Linear>(hidden, out);
        return model;
      },
      [](torch::nn::Sequential& m, const torch::Tensor& x) { return m->forward(x); }, torch::randn({4, in}));
}

}  // namespace

TEST_CASE("layers::Sequential equals torch::nn::Sequential, its names too", "[layers]") {
  check_fused({sequential_member(1, 4, 6, 3)});
  auto fused = check_fused({sequential_member(1, 4, 6, 3), sequential_member(2, 6, 9, 5), sequential_member(3, 5, 7, 4)});
  CHECK(fused.layer->stacked_parameters().front().name == "0.weight");
  CHECK(fused.layer->stacked_parameters().back().name == "2.bias");
  check_keep(*fused.layer, {torch::randn({4, 4}), torch::randn({4, 6}), torch::randn({4, 5})}, {0, 2});
}

TEST_CASE("A member that fails a check deep in the model leaves the model unchanged", "[layers]") {
  // The failing check is the last layer's, after the others would have taken the member.
  auto model = [](std::int64_t hidden, double eps) {
    auto m = std::make_shared<layers::Sequential>();
    m->emplace<layers::Linear>(3, hidden);
    m->emplace<layers::Activation>("tanh");
    m->emplace<layers::LayerNorm>(hidden, eps);
    return m;
  };
  auto fused = model(4, 1e-5);
  fused->append(*model(6, 1e-5));
  fused->eval();
  const auto input = stack_padded({torch::randn({2, 3}), torch::randn({2, 3})});
  torch::NoGradGuard no_grad;
  const auto before = fused->forward(input);
  const auto params = fused->stacked_parameters();
  std::vector<torch::Tensor> values;
  for (const auto& p : params) values.push_back(p.tensor.clone());

  CHECK_THROWS_AS(fused->append(*model(8, 1e-3)), Error);
  CHECK(fused->members() == 2);
  for (const auto& child : fused->children()) CHECK(dynamic_cast<Layer&>(*child).members() == 2);
  const auto after = fused->stacked_parameters();
  REQUIRE(after.size() == params.size());
  for (std::size_t i = 0; i < after.size(); ++i) {
    INFO("parameter " << after[i].name);
    CHECK(after[i].own == params[i].own);
    CHECK(torch::equal(after[i].tensor, values[i]));
  }
  CHECK(torch::equal(fused->forward(input), before));
}
