#pragma once
// A 2-D convolution of K members, on [K, B, C, H, W] activations. Weights are stacked
// [K, out, in, kh, kw]. On a GPU the members run as ONE grouped convolution (groups = K) over
// channel-stacked inputs; on the CPU, whose grouped convolution is no faster, member by
// member, so that each member's sums run in its solo order, bit for bit. Members may differ in
// both channel counts. Square kernels, zero padding; initialised exactly as torch::nn::Conv2d
// with the same arguments.
//
// On the grouped path an activation stays batch-major in memory ([B, K, C, H, W], as HFTA keeps
// it) and is handed on as a [K, B, ...] view of that: the next convolution, batch norm,
// pooling, activation or residual add reads it as [B, K*C, ...] without a copy, and so do
// their gradients. Only the first layer's input (member-major) is copied once.
#include "layers/layer.hpp"

namespace packtune::layers {

class Conv2d : public Layer {
 public:
  Conv2d(std::int64_t in_channels, std::int64_t out_channels, std::int64_t kernel, std::int64_t stride = 1,
         std::int64_t padding = 0, bool bias = true);
  torch::Tensor forward(const torch::Tensor& x) override;

 protected:
  // Members fuse only with one kernel size, stride and padding (throws packtune::Error).
  void check_values(const Layer& other) const override;

 private:
  std::int64_t stride_, padding_;
  torch::Tensor weight_, bias_;
};

}  // namespace packtune::layers
