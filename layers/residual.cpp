#include "layers/residual.hpp"

namespace packtune::layers {

Residual::Residual(std::shared_ptr<Layer> body, std::shared_ptr<Layer> shortcut)
    : body_(register_module("body", std::move(body))) {
  if (shortcut) shortcut_ = register_module("shortcut", std::move(shortcut));
}

torch::Tensor Residual::forward(const torch::Tensor& x) {
  return body_->forward(x) + (shortcut_ ? shortcut_->forward(x) : x);
}

}  // namespace packtune::layers
