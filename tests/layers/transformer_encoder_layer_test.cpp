#include "layer_check.hpp"
#include "layers/transformer_encoder_layer.hpp"

using namespace packtune;
using namespace packtune::testing;

namespace {

constexpr std::int64_t kHeadDim = 4;

Member encoder_member(std::uint64_t seed, std::int64_t heads, std::int64_t feedforward, double dropout,
                      const std::string& activation) {
  const auto d = heads * kHeadDim;
  return make_member(
      seed,
      [&] {
        torch::nn::TransformerEncoderLayerOptions options(d, heads);
        options.dim_feedforward(feedforward).dropout(dropout);
        if (activation == "gelu") {
          options.activation(torch::kGELU);
        } else {
          options.activation(torch::kReLU);
        }
        return torch::nn::TransformerEncoderLayer(options);
      },
      [&] { return std::make_shared<layers::TransformerEncoderLayer>(d, heads, feedforward, dropout, activation); },
      [](torch::nn::TransformerEncoderLayer& m, const torch::Tensor& x) { return m(x.transpose(0, 1)).transpose(0, 1); },
      torch::randn({3, 4, d}));
}

}  // namespace

TEST_CASE("layers::TransformerEncoderLayer equals torch::nn::TransformerEncoderLayer alone and fused with unlike widths",
          "[layers]") {
  for (std::string activation : {"relu", "gelu"}) {
    INFO("activation " << activation);
    // Training without dropout (LibTorch's own masks could not be matched).
    check_fused({encoder_member(1, 2, 16, 0.0, activation)});
    auto fused = check_fused({encoder_member(1, 2, 16, 0.0, activation), encoder_member(2, 4, 24, 0.0, activation),
                              encoder_member(3, 3, 20, 0.0, activation)});
    check_keep(*fused.layer, {torch::randn({3, 4, 8}), torch::randn({3, 4, 16}), torch::randn({3, 4, 12})}, {0, 2});
    CHECK(fused.layer->stacked_parameters().front().name == "self_attn.in_proj_weight");
    // Dropout's rates in eval() mode.
    FusedCheck eval;
    eval.train = false;
    check_fused({encoder_member(1, 2, 16, 0.1, activation), encoder_member(2, 4, 24, 0.2, activation),
                 encoder_member(3, 3, 20, 0.1, activation)},
                eval);
  }
  layers::TransformerEncoderLayer relu(8, 2, 16, 0.0, "relu"), gelu(8, 2, 16, 0.0, "gelu");
  CHECK_THROWS_AS(relu.append(gelu), Error);
  CHECK_THROWS_AS(layers::TransformerEncoderLayer(8, 2, 16, 0.0, "tanh"), InputError);
}

TEST_CASE("layers::TransformerEncoderLayer's dropouts give a member its masks alone", "[layers]") {
  const std::vector<std::int64_t> heads{2, 4, 3}, feedforward{16, 24, 20};
  const std::vector<double> rates{0.0, 0.2, 0.1};  // one member drops nothing
  auto build = [&](std::size_t i) {
    torch::manual_seed(40 + i);
    return std::make_shared<layers::TransformerEncoderLayer>(heads[i] * kHeadDim, heads[i], feedforward[i], rates[i]);
  };
  std::vector<torch::Tensor> inputs;
  for (auto h : heads) inputs.push_back(torch::randn({3, 4, h * kHeadDim}));
  std::vector<std::shared_ptr<layers::Layer>> alone;
  for (std::size_t i = 0; i < heads.size(); ++i) alone.push_back(build(i));
  auto fused = build(0);
  for (std::size_t i = 1; i < heads.size(); ++i) fused->append(*alone[i]);
  check_member_masks(*fused, alone, inputs, {9, 10, 11}, rates);
}
