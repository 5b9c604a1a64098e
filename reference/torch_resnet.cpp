#include "reference/torch_resnet.hpp"

#include "reference/torch_classifier.hpp"
#include "reference/member_dropout.hpp"

namespace packtune::reference {

ResidualImpl::ResidualImpl(torch::nn::Sequential body, torch::nn::Sequential shortcut)
    : body_(register_module("body", std::move(body))) {
  if (shortcut) shortcut_ = register_module("shortcut", std::move(shortcut));
}

torch::Tensor ResidualImpl::forward(const torch::Tensor& x) {
  return body_->forward(x) + (shortcut_ ? shortcut_->forward(x) : x);
}

torch::nn::Sequential build_resnet(const spec::ModelSpec& spec, const spec::InputShape& input) {
  auto activation = [&spec](torch::nn::Sequential& seq) { add_activation(seq, spec.activation); };
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
      model->push_back(Residual(body, shortcut));
      activation(model);
      channels = out;
    }
  }
  model->push_back(torch::nn::AdaptiveAvgPool2d(1));
  model->push_back(torch::nn::Flatten());
  if (spec.dropout > 0) model->push_back(MemberDropout(spec.dropout));
  model->push_back(torch::nn::Linear(channels, input.outputs));
  return model;
}

}  // namespace packtune::reference
