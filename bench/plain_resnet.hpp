#pragma once
// actors::build_resnet's network written with LibTorch's own modules (torch::nn::Conv2d,
// BatchNorm2d, ...): the plain-LibTorch baseline pack_bench times a fused ResNet against, and
// the reference tests/actors/resnet_test.cpp checks build_resnet's arithmetic with. Its
// state-dict names are a member's names in build_resnet's model, so weights copy by name.
#include <cstdint>
#include <string>

#include <torch/torch.h>

#include "actors/classifier.hpp"
#include "packtune/error.hpp"

namespace packtune::bench {

// body(x) + x, or body(x) + shortcut(x) when the block projects.
class PlainResidualImpl : public torch::nn::Module {
 public:
  PlainResidualImpl(torch::nn::Sequential body, torch::nn::Sequential shortcut)
      : body_(register_module("body", body)) {
    if (shortcut) shortcut_ = register_module("shortcut", shortcut);
  }
  torch::Tensor forward(const torch::Tensor& x) {
    return body_->forward(x) + (shortcut_ ? shortcut_->forward(x) : x);
  }

 private:
  torch::nn::Sequential body_, shortcut_{nullptr};
};
TORCH_MODULE(PlainResidual);

// Inputs [B, C, H, W], outputs [B, classes].
inline torch::nn::Sequential plain_resnet(const actors::ModelSpec& spec, const actors::InputShape& input) {
  auto activation = [&spec](torch::nn::Sequential& seq) {
    if (spec.activation == "relu") seq->push_back(torch::nn::ReLU());
    else if (spec.activation == "tanh") seq->push_back(torch::nn::Tanh());
    else if (spec.activation == "gelu") seq->push_back(torch::nn::GELU());
    else if (spec.activation == "sigmoid") seq->push_back(torch::nn::Sigmoid());
    else throw InputError("activation: unknown activation \"" + spec.activation + "\"");
  };
  auto conv = [&spec](torch::nn::Sequential& seq, std::int64_t in, std::int64_t out, std::int64_t kernel,
                      std::int64_t stride) {
    seq->push_back(torch::nn::Conv2d(
        torch::nn::Conv2dOptions(in, out, kernel).stride(stride).padding(kernel / 2).bias(!spec.batch_norm)));
    if (spec.batch_norm) seq->push_back(torch::nn::BatchNorm2d(out));
  };
  torch::nn::Sequential model;
  std::int64_t channels = spec.channels;
  conv(model, input.channels, channels, 3, 1);
  activation(model);
  for (int stage = 0; stage < spec.stages; ++stage) {
    const std::int64_t out = std::int64_t{spec.channels} << stage;
    for (int block = 0; block < spec.blocks; ++block) {
      const std::int64_t stride = stage > 0 && block == 0 ? 2 : 1;
      torch::nn::Sequential body, shortcut{nullptr};
      conv(body, channels, out, 3, stride);
      activation(body);
      conv(body, out, out, 3, 1);
      if (stride != 1 || channels != out) {
        shortcut = torch::nn::Sequential();
        conv(shortcut, channels, out, 1, stride);
      }
      model->push_back(PlainResidual(body, shortcut));
      activation(model);
      channels = out;
    }
  }
  model->push_back(torch::nn::AdaptiveAvgPool2d(1));
  model->push_back(torch::nn::Flatten());
  if (spec.dropout > 0) model->push_back(torch::nn::Dropout(spec.dropout));
  model->push_back(torch::nn::Linear(channels, input.classes));
  return model;
}

}  // namespace packtune::bench
