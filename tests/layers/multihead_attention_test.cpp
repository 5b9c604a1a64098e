#include "layer_check.hpp"
#include "layers/multihead_attention.hpp"

using namespace packtune;
using namespace packtune::testing;

namespace {

constexpr std::int64_t kHeadDim = 4;

// LibTorch's module takes [L, B, E]: the member's batch-first input is transposed around it.
torch::Tensor solo_attention(torch::nn::MultiheadAttention& m, const torch::Tensor& x) {
  auto t = x.transpose(0, 1);
  return std::get<0>(m(t, t, t)).transpose(0, 1);
}

Member attention_member(std::uint64_t seed, std::int64_t heads, double dropout = 0.0, bool bias = true) {
  const auto e = heads * kHeadDim;
  return make_member(
      seed,
      [&] { return torch::nn::MultiheadAttention(torch::nn::MultiheadAttentionOptions(e, heads).dropout(dropout).bias(bias)); },
      [&] { return std::make_shared<layers::MultiheadAttention>(e, heads, dropout, bias); }, solo_attention,
      torch::randn({3, 5, e}));
}

}  // namespace

TEST_CASE("layers::MultiheadAttention equals torch::nn::MultiheadAttention alone and fused with unlike heads",
          "[layers]") {
  for (bool bias : {true, false}) {
    INFO("bias " << bias);
    check_fused({attention_member(1, 2, 0.0, bias)});
    auto fused = check_fused(
        {attention_member(1, 2, 0.0, bias), attention_member(2, 4, 0.0, bias), attention_member(3, 3, 0.0, bias)});
    check_keep(*fused.layer, {torch::randn({3, 5, 8}), torch::randn({3, 5, 16}), torch::randn({3, 5, 12})}, {0, 2});
    CHECK(fused.layer->stacked_parameters().front().tensor.sizes() == at::IntArrayRef({2, 12, 3, 12}));
    CHECK(dynamic_cast<layers::MultiheadAttention&>(*fused.layer).heads(1) == 3);
  }
  // With a rate of dropout, eval() mode: no dropout in either.
  FusedCheck eval;
  eval.train = false;
  check_fused({attention_member(1, 2, 0.25), attention_member(2, 4, 0.25), attention_member(3, 3, 0.25)}, eval);
}

TEST_CASE("layers::MultiheadAttention's state dict is LibTorch's", "[layers]") {
  torch::manual_seed(5);
  torch::nn::MultiheadAttention solo(12, 3);
  layers::MultiheadAttention layer(solo);
  check_state(layer, 0, *solo);
  layers::MultiheadAttention wider(16, 4);
  layer.append(wider);
  // The packed q, k, v blocks come back apart from the padding.
  check_state(layer, 0, *solo);
  const auto names = layer.member_tensors(1);
  REQUIRE(names.size() == 4);
  CHECK(names[0].first == "in_proj_weight");
  CHECK(names[0].second.sizes() == at::IntArrayRef({48, 16}));
  CHECK(names[2].first == "out_proj.weight");
  layers::MultiheadAttention other_head_dim(10, 2);
  CHECK_THROWS_AS(layer.append(other_head_dim), Error);
}

TEST_CASE("layers::MultiheadAttention's attention dropout gives a member its masks alone", "[layers]") {
  const std::vector<std::int64_t> heads{2, 4, 3};
  std::vector<std::shared_ptr<layers::Layer>> alone;
  std::vector<torch::Tensor> inputs;
  for (std::size_t i = 0; i < heads.size(); ++i) {
    torch::manual_seed(20 + i);
    alone.push_back(std::make_shared<layers::MultiheadAttention>(heads[i] * kHeadDim, heads[i], 0.3));
    inputs.push_back(torch::randn({3, 5, heads[i] * kHeadDim}));
  }
  torch::manual_seed(20);  // member 0 again, to fuse the others into
  auto fused = std::make_shared<layers::MultiheadAttention>(heads[0] * kHeadDim, heads[0], 0.3);
  for (std::size_t i = 1; i < heads.size(); ++i) fused->append(*alone[i]);
  check_member_masks(*fused, alone, inputs, {5, 6, 7}, {0.3, 0.3, 0.3});
}
