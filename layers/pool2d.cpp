#include "layers/pool2d.hpp"

namespace packtune::layers {

Pool2d::Pool2d(const torch::nn::MaxPool2dOptions& options) : max_(options) {}
Pool2d::Pool2d(const torch::nn::AvgPool2dOptions& options) : avg_(options) {}
Pool2d::Pool2d(const torch::nn::AdaptiveAvgPool2dOptions& options) : adaptive_(options) {}

torch::Tensor Pool2d::forward(const torch::Tensor& x) {
  // Members and batch merged: [K*B, C, H, W], pooled as one batch.
  auto merged = x.reshape({x.size(0) * x.size(1), x.size(2), x.size(3), x.size(4)});
  namespace F = torch::nn::functional;
  torch::Tensor y;
  if (max_) {
    y = F::max_pool2d(merged, F::MaxPool2dFuncOptions(max_->kernel_size())
                                  .stride(max_->stride()).padding(max_->padding())
                                  .dilation(max_->dilation()).ceil_mode(max_->ceil_mode()));
  } else if (avg_) {
    y = F::avg_pool2d(merged, F::AvgPool2dFuncOptions(avg_->kernel_size())
                                  .stride(avg_->stride()).padding(avg_->padding())
                                  .ceil_mode(avg_->ceil_mode()).count_include_pad(avg_->count_include_pad())
                                  .divisor_override(avg_->divisor_override()));
  } else {
    y = F::adaptive_avg_pool2d(merged, F::AdaptiveAvgPool2dFuncOptions(adaptive_->output_size()));
  }
  return y.view({x.size(0), x.size(1), y.size(1), y.size(2), y.size(3)});
}

}  // namespace packtune::layers
