// A model plugin: a VGG-style CNN family, "vgg", written once with packtune's fusable layers.
// packtune fuses K trials of it into one model (the layers stack their members), pads unlike
// widths, and checks a config's hyper-parameters against the declaration below before any
// actor starts. Build it against an installed packtune (CMakeLists.txt here) and run:
//
//   packtune run vgg_fashion_mnist.json          (its "model_plugin" names the library)
//   packtune run CONFIG --model-plugin ./build/libvgg_model_plugin.so
//
// Roles: `blocks` changes the layers (Structure: trials fuse only with equal values);
// `channels` changes sizes only (Width: unlike values fuse, padded to the widest); `dropout`
// is a per-member rate the Dropout layer takes as it is (Value: trials fuse freely), so the
// Dropout layer is there whatever the rate, 0 included.
#include <memory>
#include <variant>

#include "layers/activation.hpp"
#include "layers/batch_norm.hpp"
#include "layers/conv2d.hpp"
#include "layers/dropout.hpp"
#include "layers/flatten.hpp"
#include "layers/linear.hpp"
#include "layers/model_plugin.hpp"
#include "layers/pool2d.hpp"
#include "layers/sequential.hpp"

namespace {

using packtune::layers::HyperParameter;

#ifndef VGG_FAMILY_NAME
#define VGG_FAMILY_NAME "vgg"
#endif

HyperParameter parameter(const char* name, HyperParameter::Type type, HyperParameter::Role role,
                         packtune::tuners::ParamValue default_value, double low, double high, const char* help) {
  HyperParameter p;
  p.name = name;
  p.type = type;
  p.role = role;
  p.default_value = std::move(default_value);
  p.low = low;
  p.high = high;
  p.help = help;
  return p;
}

packtune::layers::FamilyDeclaration vgg_declaration() {
  using Type = HyperParameter::Type;
  using Role = HyperParameter::Role;
  packtune::layers::FamilyDeclaration family;
  family.name = VGG_FAMILY_NAME;
  family.hyperparameters = {
      parameter("blocks", Type::Integer, Role::Structure, std::int64_t{2}, 1, 3,
                "conv blocks (two 3x3 convolutions and a 2x2 max pool each); 28x28 images allow 3"),
      parameter("channels", Type::Integer, Role::Width, std::int64_t{16}, 1, 256,
                "the first block's channels; each further block doubles them"),
      parameter("dropout", Type::Real, Role::Value, 0.0, 0.0, 0.9, "dropout before the classifier"),
  };
  return family;
}

std::int64_t integer(const packtune::tuners::TrialConfig& params, const char* name) {
  return std::get<std::int64_t>(params.at(name));
}

// params holds every declared hyper-parameter, checked and with defaults filled in.
std::shared_ptr<packtune::layers::Layer> build_vgg(const packtune::tuners::TrialConfig& params,
                                                   const packtune::layers::ModelInput& input) {
  namespace L = packtune::layers;
  const auto blocks = integer(params, "blocks");
  auto model = std::make_shared<L::Sequential>();
  std::int64_t in = input.channels, height = input.height, width = input.width;
  for (std::int64_t b = 0; b < blocks; ++b) {
    const std::int64_t out = integer(params, "channels") << b;
    for (int conv = 0; conv < 2; ++conv) {
      model->emplace<L::Conv2d>(conv == 0 ? in : out, out, 3, 1, 1, /*bias=*/false);
      model->add(L::batch_norm_2d(out));
      model->emplace<L::Activation>("relu");
    }
    model->add(L::max_pool2d(2));
    in = out;
    height /= 2;
    width /= 2;
  }
  model->emplace<L::Flatten>();
  model->emplace<L::Dropout>(std::get<double>(params.at("dropout")));
  model->emplace<L::Linear>(in * height * width, input.outputs);
  return model;
}

}  // namespace

PACKTUNE_MODEL_PLUGIN(registry) { registry.add({vgg_declaration(), build_vgg}); }
