#pragma once
// Batch normalisation of K members over [K, B, C] or [K, B, C, L] (BatchNorm1d) and
// [K, B, C, H, W] (BatchNorm2d) activations: statistics per member and channel, scale, shift
// and running statistics stacked [K, C]. Members may differ in channel count; a padded channel
// sees zeros and has zero scale and shift, so it stays zero. Takes LibTorch's own options
// (affine, a numeric momentum, eps, track_running_stats) and holds what its module holds,
// under the same names, including num_batches_tracked.
#include "layers/layer.hpp"

namespace packtune::layers {

class BatchNorm : public Layer {
 public:
  // `spatial_dims`: 1 for BatchNorm1d (inputs [K, B, C] or [K, B, C, L]), 2 for BatchNorm2d.
  // It names the twin only: the computation follows the input's rank.
  BatchNorm(const torch::nn::BatchNormOptions& options, int spatial_dims);
  torch::Tensor forward(const torch::Tensor& x) override;

 protected:
  // Members fuse only with one eps and momentum (throws packtune::Error otherwise).
  void check_values(const Layer& other) const override;

 private:
  torch::nn::BatchNormOptions options_;
  torch::Tensor weight_, bias_, running_mean_, running_var_, batches_;
};

inline std::shared_ptr<BatchNorm> batch_norm_1d(std::int64_t features) {
  return std::make_shared<BatchNorm>(torch::nn::BatchNormOptions(features), 1);
}
inline std::shared_ptr<BatchNorm> batch_norm_2d(std::int64_t channels) {
  return std::make_shared<BatchNorm>(torch::nn::BatchNormOptions(channels), 2);
}

}  // namespace packtune::layers
