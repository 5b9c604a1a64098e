#include "layers/linear.hpp"

namespace packtune::layers {

Linear::Linear(std::int64_t in_features, std::int64_t out_features, bool bias)
    : Linear(torch::nn::Linear(torch::nn::LinearOptions(in_features, out_features).bias(bias))) {}

Linear::Linear(const torch::nn::Linear& solo) {
  weight_ = add_stacked_parameter("weight", solo->weight, SoloLayout::Transposed);
  if (solo->bias.defined()) bias_ = add_stacked_parameter("bias", solo->bias, SoloLayout::Row);
}

torch::Tensor Linear::forward(const torch::Tensor& x) {
  // Any dimensions between the batch and the features (tokens) ride along with the batch.
  const auto k = x.size(0);
  auto flat = x.reshape({k, -1, x.size(-1)});
  auto y = bias_.defined() ? torch::baddbmm(bias_, flat, weight_) : torch::bmm(flat, weight_);
  auto sizes = x.sizes().vec();
  sizes.back() = weight_.size(2);
  return y.view(sizes);
}

}  // namespace packtune::layers
