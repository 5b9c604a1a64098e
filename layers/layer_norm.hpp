#pragma once
// Layer normalisation of K members over the last dimension of [K, B, ..., D] activations, as
// torch::nn::LayerNorm with a one-dimensional normalized_shape. Scale and shift are stacked
// [K, D]. Members may differ in width: each member's mean and variance are taken over its own
// features only, and its padded features come out exactly zero.
#include <vector>

#include "layers/layer.hpp"

namespace packtune::layers {

class LayerNorm : public Layer {
 public:
  // Initialised exactly as torch::nn::LayerNorm(LayerNormOptions({normalized_size}).eps(eps)
  // .elementwise_affine(elementwise_affine)) (weight ones, bias zeros).
  explicit LayerNorm(std::int64_t normalized_size, double eps = 1e-5, bool elementwise_affine = true);
  // One member holding a copy of `solo`'s tensors; its normalized_shape must have one size.
  // Throws InputError otherwise.
  explicit LayerNorm(const torch::nn::LayerNorm& solo);

  // batched() where K > 1 members run grouped (grouped_kernels: by default on a GPU); else
  // member by member, each by LibTorch's own layer_norm over its own features, so a member's
  // outputs are bitwise its solo outputs.
  torch::Tensor forward(const torch::Tensor& x) override;
  // All members at once: the statistics are sums over each member's own features (padded
  // features masked out), divided by its own width. Public so that tests check it on any device.
  torch::Tensor batched(const torch::Tensor& x);

  // Member k's own width.
  std::int64_t width(std::int64_t k = 0) const { return widths_[static_cast<std::size_t>(k)]; }
  double eps() const { return eps_; }

 protected:
  // Members fuse only with an equal eps (throws packtune::Error otherwise).
  void check_values(const Layer& other) const override;
  void append_values(Layer& other) override;
  void keep_values(const std::vector<std::int64_t>& which) override;
  void members_changed() override { mask_.reset(); }

 private:
  double eps_;
  std::vector<std::int64_t> widths_;
  torch::Tensor weight_, bias_;
  c10::optional<torch::Tensor> mask_;  // [K, D] float, 1 on a member's own features
};

}  // namespace packtune::layers
