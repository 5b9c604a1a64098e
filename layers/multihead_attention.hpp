#pragma once
// Multi-head self-attention of K members (query = key = value = the input), as
// torch::nn::MultiheadAttention computes it, on batch-first activations [K, B, L, E] (LibTorch's
// module takes [L, B, E]). A member holds what LibTorch's module holds, under its names:
// in_proj_weight [3E, E] and in_proj_bias [3E] (stacked [K, E, 3, E] and [K, 3, E], see
// SoloLayout::QkvWeight) and out_proj.weight/out_proj.bias (a Linear).
//
// Members may differ in their number of heads at one head_dim, so their widths differ by whole
// heads: a padded head's queries, keys and values are zero, its attention is uniform over zero
// values, so its output is zero and meets zero out-projection weights. Optional dropout on the
// attention weights ("dropout", a layers::Dropout: per-member masks from MemberSeeds).
// No masks, no bias_k/bias_v, no add_zero_attn, no separate key/value widths.
#include <memory>
#include <vector>

#include "layers/dropout.hpp"
#include "layers/linear.hpp"

namespace packtune::layers {

class MultiheadAttention : public Layer {
 public:
  // Initialised exactly as torch::nn::MultiheadAttention(MultiheadAttentionOptions(embed_dim,
  // num_heads).dropout(dropout).bias(bias)).
  MultiheadAttention(std::int64_t embed_dim, std::int64_t num_heads, double dropout = 0.0, bool bias = true);
  // One member holding a copy of `solo`'s tensors, drawing nothing. Throws InputError for the
  // options this layer does not have (add_bias_kv, add_zero_attn, kdim or vdim not embed_dim).
  explicit MultiheadAttention(const torch::nn::MultiheadAttention& solo);

  // [K, B, L, E] -> [K, B, L, E], LibTorch's attention output (its weights are not returned).
  torch::Tensor forward(const torch::Tensor& x) override;

  std::int64_t head_dim() const { return head_dim_; }
  // Member k's number of heads.
  std::int64_t heads(std::int64_t k = 0) const { return heads_[static_cast<std::size_t>(k)]; }

 protected:
  // Members fuse only at one head_dim (throws packtune::Error otherwise).
  void check_values(const Layer& other) const override;
  void append_values(Layer& other) override;
  void keep_values(const std::vector<std::int64_t>& which) override;

 private:
  std::int64_t head_dim_;
  std::vector<std::int64_t> heads_;
  torch::Tensor in_proj_weight_, in_proj_bias_;
  std::shared_ptr<Linear> out_proj_;
  std::shared_ptr<Dropout> dropout_;
};

}  // namespace packtune::layers
