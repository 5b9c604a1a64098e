#pragma once
// actors::build_resnet's network written with LibTorch's own modules (torch::nn::Conv2d,
// BatchNorm2d, ...): the reference tests/actors/resnet_test.cpp checks the layer-library
// ResNet against, and through build_classifier the plain-LibTorch ResNet of the reference
// trainer and pack_bench.
#include <torch/torch.h>

#include "actors/classifier.hpp"

namespace packtune::reference {

// body(x) + x, or body(x) + shortcut(x) when the block projects; children "body" and
// "shortcut", as layers::Residual names them.
class ResidualImpl : public torch::nn::Module {
 public:
  ResidualImpl(torch::nn::Sequential body, torch::nn::Sequential shortcut);
  torch::Tensor forward(const torch::Tensor& x);

 private:
  torch::nn::Sequential body_, shortcut_{nullptr};
};
TORCH_MODULE(Residual);

// Inputs [B, C, H, W], outputs [B, classes]; state-dict names equal those of
// actors::build_resnet's model for the same spec, so weights copy by name.
torch::nn::Sequential build_resnet(const spec::ModelSpec& spec, const spec::InputShape& input);

}  // namespace packtune::reference
