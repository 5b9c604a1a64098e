#pragma once
// An element-wise activation (relu, tanh, gelu, sigmoid, silu, elu, leaky_relu) of K members.
// Every one maps 0 to itself but sigmoid, whose 0.5 on padded units meets the next layer's
// zero padding weights, so members' own outputs are unchanged by padding.
#include <string>

#include "layers/layer.hpp"

namespace packtune::layers {

// LibTorch's gelu (exact, not tanh-approximated), but with a backward that makes the incoming
// gradient contiguous first: LibTorch 1.13's CPU gelu backward returns wrong values for a
// non-contiguous gradient (one that comes back through a transpose), where relu, tanh,
// sigmoid, silu, elu and leaky_relu do not. Not twice differentiable.
torch::Tensor gelu(const torch::Tensor& x);

class Activation : public Layer {
 public:
  // Throws InputError for an unknown name.
  explicit Activation(const std::string& name);
  torch::Tensor forward(const torch::Tensor& x) override;
  const std::string& kind() const { return name_; }
  static const std::vector<std::string>& names();

 protected:
  // Members fuse only with one activation (throws packtune::Error otherwise).
  void check_values(const Layer& other) const override;

 private:
  std::string name_;
};

}  // namespace packtune::layers
