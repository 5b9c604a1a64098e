#pragma once
// A residual connection: body(x) + x, or body(x) + shortcut(x) where the shortcut projects
// (a 1x1 convolution when a ResNet stage changes width). Sub-layers are named "body" and
// "shortcut". Padded positions add zero to zero.
#include <memory>

#include "layers/layer.hpp"

namespace packtune::layers {

class Residual : public Layer {
 public:
  explicit Residual(std::shared_ptr<Layer> body, std::shared_ptr<Layer> shortcut = nullptr);
  torch::Tensor forward(const torch::Tensor& x) override;

 private:
  std::shared_ptr<Layer> body_, shortcut_;
};

}  // namespace packtune::layers
