#include "layers/multihead_attention.hpp"

#include <cmath>

#include "packtune/error.hpp"

namespace packtune::layers {

MultiheadAttention::MultiheadAttention(std::int64_t embed_dim, std::int64_t num_heads, double dropout, bool bias)
    : MultiheadAttention(torch::nn::MultiheadAttention(
          torch::nn::MultiheadAttentionOptions(embed_dim, num_heads).dropout(dropout).bias(bias))) {}

MultiheadAttention::MultiheadAttention(const torch::nn::MultiheadAttention& solo) {
  const auto& options = solo->options;
  if (options.add_bias_kv() || options.add_zero_attn() || options.kdim() != options.embed_dim() ||
      options.vdim() != options.embed_dim()) {
    throw InputError("layers::MultiheadAttention: add_bias_kv, add_zero_attn and kdim or vdim other than embed_dim "
                     "are not supported");
  }
  head_dim_ = options.embed_dim() / options.num_heads();
  heads_.push_back(options.num_heads());
  // Registered in LibTorch's order: in_proj_weight, in_proj_bias, out_proj.
  in_proj_weight_ = add_stacked_parameter("in_proj_weight", solo->in_proj_weight, SoloLayout::QkvWeight);
  if (solo->in_proj_bias.defined()) {
    in_proj_bias_ = add_stacked_parameter("in_proj_bias", solo->in_proj_bias, SoloLayout::QkvBias);
  }
  out_proj_ = register_module("out_proj", std::make_shared<Linear>(solo->out_proj));
  dropout_ = register_module("dropout", std::make_shared<Dropout>(options.dropout()));
}

void MultiheadAttention::check_values(const Layer& other) const {
  const auto& theirs = dynamic_cast<const MultiheadAttention&>(other);
  if (theirs.head_dim_ != head_dim_) {
    throw Error("cannot fuse attention layers with head_dim " + std::to_string(head_dim_) + " and " +
                std::to_string(theirs.head_dim_) + ": members may differ in heads, not in head_dim");
  }
}

void MultiheadAttention::append_values(Layer& other) {
  const auto& theirs = dynamic_cast<MultiheadAttention&>(other);
  heads_.insert(heads_.end(), theirs.heads_.begin(), theirs.heads_.end());
}

void MultiheadAttention::keep_values(const std::vector<std::int64_t>& which) {
  std::vector<std::int64_t> heads;
  for (auto k : which) heads.push_back(heads_[static_cast<std::size_t>(k)]);
  heads_ = std::move(heads);
}

torch::Tensor MultiheadAttention::forward(const torch::Tensor& x) {
  const auto k = x.size(0), b = x.size(1), l = x.size(2), e = in_proj_weight_.size(1);
  const auto h = e / head_dim_;
  // q, k and v for all members in one batched matmul: [K, B*L, E] x [K, E, 3E].
  auto flat = x.reshape({k, b * l, e});
  auto w = in_proj_weight_.reshape({k, e, 3 * e});
  auto qkv = in_proj_bias_.defined() ? torch::baddbmm(in_proj_bias_.reshape({k, 1, 3 * e}), flat, w)
                                     : torch::bmm(flat, w);
  qkv = qkv.view({k, b, l, 3, h, head_dim_});
  // [K, B, H, L, head_dim] each; the query scaled after its bias, as LibTorch does.
  const double scaling = 1 / std::sqrt(static_cast<double>(head_dim_));
  auto q = qkv.select(3, 0).permute({0, 1, 3, 2, 4}) * scaling;
  auto keys = qkv.select(3, 1).permute({0, 1, 3, 2, 4});
  auto values = qkv.select(3, 2).permute({0, 1, 3, 2, 4});
  auto attention = torch::softmax(torch::matmul(q, keys.transpose(-2, -1)), -1);  // [K, B, H, L, L]
  attention = dropout_->forward(attention);
  auto out = torch::matmul(attention, values).permute({0, 1, 3, 2, 4}).reshape({k, b, l, e});
  return out_proj_->forward(out);
}

}  // namespace packtune::layers
