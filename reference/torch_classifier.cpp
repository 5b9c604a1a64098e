#include "reference/torch_classifier.hpp"

#include "packtune/error.hpp"
#include "reference/member_dropout.hpp"
#include "reference/torch_resnet.hpp"

namespace packtune::reference {

using spec::InputShape;
using spec::ModelSpec;

void add_activation(torch::nn::Sequential& seq, const std::string& name) {
  if (name == "relu") seq->push_back(torch::nn::ReLU());
  else if (name == "tanh") seq->push_back(torch::nn::Tanh());
  else if (name == "gelu") seq->push_back(torch::nn::GELU());
  else if (name == "sigmoid") seq->push_back(torch::nn::Sigmoid());
  else throw InputError("activation: unknown activation \"" + name + "\"");
}

torch::nn::Sequential build_classifier(const ModelSpec& spec, const InputShape& input) {
  if (spec.family == "resnet") return build_resnet(spec, input);
  torch::nn::Sequential seq;
  std::int64_t features = 0;
  if (spec.family == "mlp") {
    seq->push_back(torch::nn::Flatten());
    features = std::int64_t{input.channels} * input.height * input.width;
    for (int i = 0; i < spec.depth; ++i) {
      seq->push_back(torch::nn::Linear(features, spec.width));
      add_activation(seq, spec.activation);
      if (spec.dropout > 0) seq->push_back(MemberDropout(spec.dropout));
      features = spec.width;
    }
  } else if (spec.family == "cnn") {
    std::int64_t c = input.channels, h = input.height, w = input.width;
    for (int i = 0; i < spec.depth; ++i) {
      const std::int64_t out = std::int64_t{spec.channels} << i;
      // A bias before batch norm is cancelled by its mean subtraction; its gradient is pure
      // rounding noise, which Adam would amplify into real updates.
      seq->push_back(torch::nn::Conv2d(
          torch::nn::Conv2dOptions(c, out, spec.kernel).padding(spec.kernel / 2).bias(!spec.batch_norm)));
      if (spec.batch_norm) seq->push_back(torch::nn::BatchNorm2d(out));
      add_activation(seq, spec.activation);
      seq->push_back(torch::nn::MaxPool2d(torch::nn::MaxPool2dOptions(2)));
      c = out;
      h = (h + 2 * (spec.kernel / 2) - spec.kernel + 1) / 2;
      w = (w + 2 * (spec.kernel / 2) - spec.kernel + 1) / 2;
      if (h < 1 || w < 1) {
        throw InputError("depth: " + std::to_string(spec.depth) + " conv blocks shrink " +
                         std::to_string(input.height) + "x" + std::to_string(input.width) +
                         " images to nothing; use fewer blocks");
      }
    }
    seq->push_back(torch::nn::Flatten());
    features = c * h * w;
    if (spec.width > 0) {
      seq->push_back(torch::nn::Linear(features, spec.width));
      add_activation(seq, spec.activation);
      if (spec.dropout > 0) seq->push_back(MemberDropout(spec.dropout));
      features = spec.width;
    }
  } else {
    throw InputError("family: unknown model family \"" + spec.family + "\"; expected mlp, cnn or resnet");
  }
  seq->push_back(torch::nn::Linear(features, input.outputs));
  return seq;
}

}  // namespace packtune::reference
