#pragma once
// A Transformer encoder layer of K members, as torch::nn::TransformerEncoderLayer (LibTorch
// 1.13's C++ module: post-norm) computes it, on batch-first activations [K, B, L, d_model]:
//   y = norm1(x + dropout1(self_attn(x)))
//   out = norm2(y + dropout2(linear2(dropout(activation(linear1(y))))))
// Built from the library's layers under LibTorch's names (self_attn, linear1, dropout, linear2,
// norm1, norm2, dropout1, dropout2), so a member's tensors are its solo module's state dict.
// Members may differ in d_model by whole heads at one head_dim (MultiheadAttention) and in
// dim_feedforward; their rates of dropout may differ too. Not batch-first in LibTorch: its
// module takes [L, B, E], so compare a member with it on the transposed input.
#include <memory>
#include <string>

#include "layers/dropout.hpp"
#include "layers/layer_norm.hpp"
#include "layers/linear.hpp"
#include "layers/multihead_attention.hpp"

namespace packtune::layers {

class TransformerEncoderLayer : public Layer {
 public:
  // `activation`: "relu" or "gelu" (throws InputError otherwise). Initialised exactly as
  // torch::nn::TransformerEncoderLayer with these options.
  TransformerEncoderLayer(std::int64_t d_model, std::int64_t nhead, std::int64_t dim_feedforward = 2048,
                          double dropout = 0.1, const std::string& activation = "relu");
  // One member holding a copy of `solo`'s tensors, drawing nothing; its activation must be
  // kReLU or kGELU (throws InputError otherwise).
  explicit TransformerEncoderLayer(const torch::nn::TransformerEncoderLayer& solo);

  torch::Tensor forward(const torch::Tensor& x) override;
  const std::string& activation() const { return activation_; }

 protected:
  // Members fuse only with one activation (throws packtune::Error otherwise).
  void check_values(const Layer& other) const override;

 private:
  std::string activation_;
  std::shared_ptr<MultiheadAttention> self_attn_;
  std::shared_ptr<Linear> linear1_, linear2_;
  std::shared_ptr<Dropout> dropout_, dropout1_, dropout2_;
  std::shared_ptr<LayerNorm> norm1_, norm2_;
};

}  // namespace packtune::layers
