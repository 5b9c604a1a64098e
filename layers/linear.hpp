#pragma once
// A fully connected layer of K members: weights stacked [K, in, out] (each member's weight
// transposed, so one batched matmul serves all), biases [K, 1, out]. Inputs are [K, B, ..., in];
// members may differ in both widths. Initialised exactly as torch::nn::Linear is.
#include "layers/layer.hpp"

namespace packtune::layers {

class Linear : public Layer {
 public:
  Linear(std::int64_t in_features, std::int64_t out_features, bool bias = true);
  // One member holding a copy of `solo`'s weight and bias, drawing nothing: for layers built
  // from a LibTorch module that made its own Linear (MultiheadAttention's out_proj).
  explicit Linear(const torch::nn::Linear& solo);
  torch::Tensor forward(const torch::Tensor& x) override;

 private:
  torch::Tensor weight_, bias_;
};

}  // namespace packtune::layers
