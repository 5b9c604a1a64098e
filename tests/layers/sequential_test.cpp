#include "layer_check.hpp"
#include "layers/activation.hpp"
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
