#pragma once
// 2-D pooling of K members on [K, B, C, H, W] activations: max, average or adaptive average,
// with LibTorch's own options. Pooling is per channel, so padded channels stay zero.
#include "layers/layer.hpp"

namespace packtune::layers {

class Pool2d : public Layer {
 public:
  explicit Pool2d(const torch::nn::MaxPool2dOptions& options);
  explicit Pool2d(const torch::nn::AvgPool2dOptions& options);
  explicit Pool2d(const torch::nn::AdaptiveAvgPool2dOptions& options);
  torch::Tensor forward(const torch::Tensor& x) override;

 protected:
  // Members fuse only with one kind of pooling and equal options (throws packtune::Error).
  void check_values(const Layer& other) const override;

 private:
  c10::optional<torch::nn::MaxPool2dOptions> max_;
  c10::optional<torch::nn::AvgPool2dOptions> avg_;
  c10::optional<torch::nn::AdaptiveAvgPool2dOptions> adaptive_;
};

inline std::shared_ptr<Pool2d> max_pool2d(std::int64_t kernel) {
  return std::make_shared<Pool2d>(torch::nn::MaxPool2dOptions(kernel));
}
inline std::shared_ptr<Pool2d> avg_pool2d(std::int64_t kernel) {
  return std::make_shared<Pool2d>(torch::nn::AvgPool2dOptions(kernel));
}
inline std::shared_ptr<Pool2d> adaptive_avg_pool2d(std::int64_t size) {
  return std::make_shared<Pool2d>(torch::nn::AdaptiveAvgPool2dOptions(size));
}

}  // namespace packtune::layers
