#include "actors/resnet.hpp"

#include "layers/activation.hpp"
#include "layers/batch_norm.hpp"
#include "layers/conv2d.hpp"
#include "layers/dropout.hpp"
#include "layers/flatten.hpp"
#include "layers/linear.hpp"
#include "layers/pool2d.hpp"
#include "layers/residual.hpp"
#include "layers/sequential.hpp"

namespace packtune::actors {
namespace {

// A convolution and, with batch norm, its norm, appended to `seq`. A bias before batch norm
// is cancelled by its mean subtraction (and Adam would amplify its rounding-noise gradient).
void add_conv(layers::Sequential& seq, const spec::ModelSpec& spec, std::int64_t in, std::int64_t out,
              std::int64_t kernel, std::int64_t stride) {
  seq.emplace<layers::Conv2d>(in, out, kernel, stride, kernel / 2, !spec.batch_norm);
  if (spec.batch_norm) seq.add(layers::batch_norm_2d(out));
}

std::shared_ptr<layers::Layer> basic_block(const spec::ModelSpec& spec, std::int64_t in, std::int64_t out,
                                           std::int64_t stride) {
  auto body = std::make_shared<layers::Sequential>();
  add_conv(*body, spec, in, out, 3, stride);
  body->emplace<layers::Activation>(spec.activation);
  add_conv(*body, spec, out, out, 3, 1);
  std::shared_ptr<layers::Sequential> shortcut;
  if (stride != 1 || in != out) {
    shortcut = std::make_shared<layers::Sequential>();
    add_conv(*shortcut, spec, in, out, 1, stride);
  }
  return std::make_shared<layers::Residual>(body, shortcut);
}

}  // namespace

std::shared_ptr<layers::Layer> build_resnet(const spec::ModelSpec& spec, const spec::InputShape& input) {
  require_images(spec, input);
  auto model = std::make_shared<layers::Sequential>();
  std::int64_t channels = spec.channels;
  add_conv(*model, spec, input.channels, channels, 3, 1);
  model->emplace<layers::Activation>(spec.activation);
  for (int stage = 0; stage < spec.stages; ++stage) {
    const std::int64_t out = std::int64_t{spec.channels} << stage;
    for (int block = 0; block < spec.blocks; ++block) {
      model->add(basic_block(spec, channels, out, stage > 0 && block == 0 ? 2 : 1));
      model->emplace<layers::Activation>(spec.activation);
      channels = out;
    }
  }
  model->add(layers::adaptive_avg_pool2d(1));
  model->emplace<layers::Flatten>();
  if (spec.dropout > 0) model->emplace<layers::Dropout>(spec.dropout);
  model->emplace<layers::Linear>(channels, input.outputs);
  return model;
}

}  // namespace packtune::actors
