#include "actors/classifier.hpp"

#include "actors/model_plugins.hpp"
#include "actors/resnet.hpp"
#include "actors/torchscript_model.hpp"
#include "layers/activation.hpp"
#include "layers/batch_norm.hpp"
#include "layers/conv2d.hpp"
#include "layers/dropout.hpp"
#include "layers/flatten.hpp"
#include "layers/linear.hpp"
#include "layers/model_registry.hpp"
#include "layers/pool2d.hpp"
#include "layers/sequential.hpp"
#include "packtune/error.hpp"

namespace packtune::actors {
namespace {

}  // namespace

void require_images(const spec::ModelSpec& spec, const spec::InputShape& input) {
  if (!input.images) {
    throw InputError("family: " + spec.family + " convolves images ([N, C, H, W] or [N, H, W] data); these are "
                     "feature rows of " + std::to_string(input.width) + ": use the mlp family or a model plugin");
  }
}

namespace {

// Linear, activation and (when it has a rate) dropout: a hidden layer of the MLP, or the CNN's fc.
std::int64_t add_hidden(layers::Sequential& seq, std::int64_t in, const spec::ModelSpec& spec) {
  seq.emplace<layers::Linear>(in, spec.width);
  seq.emplace<layers::Activation>(spec.activation);
  if (spec.dropout > 0) seq.emplace<layers::Dropout>(spec.dropout);
  return spec.width;
}

std::shared_ptr<layers::Layer> build_mlp(const spec::ModelSpec& spec, const spec::InputShape& input) {
  auto seq = std::make_shared<layers::Sequential>();
  seq->emplace<layers::Flatten>();
  std::int64_t features = std::int64_t{input.channels} * input.height * input.width;
  for (int i = 0; i < spec.depth; ++i) features = add_hidden(*seq, features, spec);
  seq->emplace<layers::Linear>(features, input.outputs);
  return seq;
}

std::shared_ptr<layers::Layer> build_cnn(const spec::ModelSpec& spec, const spec::InputShape& input) {
  require_images(spec, input);
  auto seq = std::make_shared<layers::Sequential>();
  std::int64_t c = input.channels, h = input.height, w = input.width;
  for (int i = 0; i < spec.depth; ++i) {
    const std::int64_t out = std::int64_t{spec.channels} << i;
    // A bias before batch norm is cancelled by its mean subtraction; its gradient is pure
    // rounding noise, which Adam would amplify into real updates.
    seq->emplace<layers::Conv2d>(c, out, spec.kernel, 1, spec.kernel / 2, !spec.batch_norm);
    if (spec.batch_norm) seq->add(layers::batch_norm_2d(out));
    seq->emplace<layers::Activation>(spec.activation);
    seq->add(layers::max_pool2d(2));
    c = out;
    h = (h + 2 * (spec.kernel / 2) - spec.kernel + 1) / 2;
    w = (w + 2 * (spec.kernel / 2) - spec.kernel + 1) / 2;
    if (h < 1 || w < 1) {
      throw InputError("depth: " + std::to_string(spec.depth) + " conv blocks shrink " + std::to_string(input.height) +
                       "x" + std::to_string(input.width) + " images to nothing; use fewer blocks");
    }
  }
  seq->emplace<layers::Flatten>();
  std::int64_t features = c * h * w;
  if (spec.width > 0) features = add_hidden(*seq, features, spec);
  seq->emplace<layers::Linear>(features, input.outputs);
  return seq;
}

}  // namespace

spec::InputShape input_shape(const datasets::BatchStream& stream) {
  const auto sample = stream.sample_shape();
  if (stream.images()) {
    return {static_cast<int>(sample[0]), static_cast<int>(sample[1]), static_cast<int>(sample[2]), stream.outputs(), true,
            stream.task()};
  }
  return {1, 1, static_cast<int>(sample[0]), stream.outputs(), false, stream.task()};
}

std::shared_ptr<layers::Layer> build_model(const spec::ModelSpec& spec, const spec::InputShape& input) {
  if (spec.family == "mlp") return build_mlp(spec, input);
  if (spec.family == "cnn") return build_cnn(spec, input);
  if (spec.family == "resnet") return build_resnet(spec, input);
  if (spec::torchscript_family(spec)) return build_torchscript_model(spec, input, torch::kCPU);
  // A model plugin's family: its declared hyper-parameters, checked and with defaults.
  if (const auto* plugin = layers::ModelRegistry::instance().find(spec.family)) {
    return build_plugin_model(*plugin, spec.params,
                              layers::ModelInput{input.channels, input.height, input.width, input.outputs}, input.images);
  }
  throw InputError("family: unknown model family \"" + spec.family + "\"; expected mlp, cnn, resnet, torchscript or a model plugin's family");
}

}  // namespace packtune::actors
