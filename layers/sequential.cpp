#include "layers/sequential.hpp"

namespace packtune::layers {

torch::Tensor Sequential::forward(const torch::Tensor& x) {
  auto y = x;
  for (auto& layer : layers_) y = layer->forward(y);
  return y;
}

}  // namespace packtune::layers
