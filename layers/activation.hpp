#pragma once
// An element-wise activation (relu, tanh, gelu, sigmoid, silu, elu, leaky_relu) of K members.
// Every one maps 0 to itself but sigmoid, whose 0.5 on padded units meets the next layer's
// zero padding weights, so members' own outputs are unchanged by padding.
#include <string>

#include "layers/layer.hpp"

namespace packtune::layers {

class Activation : public Layer {
 public:
  // Throws InputError for an unknown name.
  explicit Activation(const std::string& name);
  torch::Tensor forward(const torch::Tensor& x) override;
  const std::string& kind() const { return name_; }
  static const std::vector<std::string>& names();

 private:
  std::string name_;
};

}  // namespace packtune::layers
