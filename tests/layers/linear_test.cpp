#include "layer_check.hpp"
#include "layers/linear.hpp"

using namespace packtune;
using namespace packtune::testing;

namespace {

Member linear_member(std::uint64_t seed, std::int64_t in, std::int64_t out, bool bias, Shape batch) {
  batch.push_back(in);
  return make_member(
      seed, [&] { return torch::nn::Linear(torch::nn::LinearOptions(in, out).bias(bias)); },
      [&] { return std::make_shared<layers::Linear>(in, out, bias); },
      [](torch::nn::Linear& m, const torch::Tensor& x) { return m(x); }, torch::randn(batch));
}

}  // namespace

TEST_CASE("layers::Linear equals torch::nn::Linear alone and fused with unlike widths", "[layers]") {
  for (bool bias : {true, false}) {
    INFO("bias " << bias);
    check_fused({linear_member(1, 5, 3, bias, {4})});
    // Tokens between the batch and the features ride along.
    check_fused({linear_member(1, 5, 3, bias, {4, 2})});
    auto fused = check_fused({linear_member(1, 5, 3, bias, {4, 2}), linear_member(2, 7, 6, bias, {4, 2}),
                              linear_member(3, 6, 4, bias, {4, 2})});
    std::vector<torch::Tensor> inputs;
    for (std::int64_t in : {5, 7, 6}) inputs.push_back(torch::randn({4, 2, in}));
    check_keep(*fused.layer, inputs, {0, 2});
    CHECK(fused.layer->stacked_parameters().front().tensor.sizes() == at::IntArrayRef({2, 6, 4}));
  }
}

TEST_CASE("layers::Linear built from a LibTorch module copies it", "[layers]") {
  torch::nn::Linear solo(3, 2);
  layers::Linear layer(solo);
  check_state(layer, 0, *solo);
}
