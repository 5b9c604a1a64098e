#pragma once
// Layers applied in order, named "0", "1", ... as in torch::nn::Sequential, so a member's
// state-dict names are those of the same model built with LibTorch's modules.
#include <memory>
#include <utility>

#include "layers/layer.hpp"

namespace packtune::layers {

class Sequential : public Layer {
 public:
  // Appends `layer` and returns it.
  template <class T>
  std::shared_ptr<T> add(std::shared_ptr<T> layer) {
    register_module(std::to_string(layers_.size()), layer);
    layers_.push_back(layer);
    return layer;
  }
  template <class T, class... Args>
  std::shared_ptr<T> emplace(Args&&... args) {
    return add(std::make_shared<T>(std::forward<Args>(args)...));
  }
  torch::Tensor forward(const torch::Tensor& x) override;
  std::size_t size() const { return layers_.size(); }

 private:
  std::vector<std::shared_ptr<Layer>> layers_;
};

}  // namespace packtune::layers
