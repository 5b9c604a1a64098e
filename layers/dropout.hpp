#pragma once
// Dropout of K members, each with its own rate and its own masks. A member's mask is drawn
// from its seed for the step (MemberSeeds), the dropout's position in the forward and each
// element's coordinates, so it is the same alone or fused, padded or not, on any device.
// Without an open MemberSeeds scope (a model used outside packtune's engine), the seeds come
// from LibTorch's global generator. The identity in eval() mode and for a rate of 0.
#include <vector>

#include "layers/layer.hpp"

namespace packtune::layers {

class Dropout : public Layer {
 public:
  explicit Dropout(double p);
  torch::Tensor forward(const torch::Tensor& x) override;
  // Member k's rate.
  double p(std::int64_t k = 0) const { return p_[static_cast<std::size_t>(k)]; }

 protected:
  void append_values(Layer& other) override;
  void keep_values(const std::vector<std::int64_t>& which) override;
  void members_changed() override {
    keep_.reset();
    threshold_.reset();
  }

 private:
  std::vector<double> p_;
  c10::optional<torch::Tensor> keep_;  // [K, 1] keep probabilities, on the activations' device
  c10::optional<torch::Tensor> threshold_;  // [K, 1] int64 keep thresholds, beside keep_
};

}  // namespace packtune::layers
