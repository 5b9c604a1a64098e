#pragma once
// [K, B, d1, d2, ...] -> [K, B, d1 * d2 * ...]. A member's own features stay a prefix of the
// flattened ones only when d1 alone is padded (channels before the image's height and width),
// which is how the library's convolutions and pools leave them.
#include "layers/layer.hpp"

namespace packtune::layers {

class Flatten : public Layer {
 public:
  torch::Tensor forward(const torch::Tensor& x) override { return x.reshape({x.size(0), x.size(1), -1}); }
};

}  // namespace packtune::layers
