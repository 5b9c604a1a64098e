// pack_bench's members and their arithmetic: the specs a random search would draw, and the
// Linear and Conv2d work a sample costs (what the device's peak is set against).
#include "bench/pack_bench/workload.hpp"

#include <cmath>
#include <cstdint>

#include <torch/torch.h>

#include "reference/torch_classifier.hpp"
#include "spec/optimizer_table.hpp"

namespace packtune::bench {
namespace {

// Multiply-adds counted twice, for the layers that do the arithmetic (Linear, Conv2d);
// activations, pooling, batch norm and the optimizer are left out, so shares are a lower
// bound of the work done.
double forward_flops_per_sample(const spec::ModelSpec& spec, const spec::InputShape& input) {
  // The ResNet's convolutions nest in residual blocks; model_shape counts them the same way.
  if (spec.family == "resnet") {
    return static_cast<double>(spec::model_shape(spec, input.channels, input.height, input.width, input.outputs)
                                   .flops_per_sample);
  }
  auto model = reference::build_classifier(spec, input);
  double flops = 0;
  std::int64_t h = input.height, w = input.width;
  for (const auto& child : model->children()) {
    if (auto* linear = child->as<torch::nn::Linear>()) {
      flops += 2.0 * static_cast<double>(linear->options.in_features() * linear->options.out_features());
    } else if (auto* conv = child->as<torch::nn::Conv2d>()) {
      const std::int64_t k = spec.kernel, pad = spec.kernel / 2;
      h = h + 2 * pad - k + 1;
      w = w + 2 * pad - k + 1;
      flops += 2.0 * static_cast<double>(conv->options.in_channels() * k * k *
                                         conv->options.out_channels() * h * w);
    } else if (child->as<torch::nn::MaxPool2d>()) {
      h /= 2;
      w /= 2;
    }
  }
  return flops;
}

}  // namespace

spec::Precision use_precision(const Options& o, const std::string& device) {
  const auto requested = spec::parse_precision(o.precision, "--precision");
  if (requested == spec::Precision::Bf16 && device == "cpu") {
    actors::set_training_precision(requested, /*on_cpu_too=*/true);
    return requested;
  }
  return actors::use_precision(requested, device);
}

spec::TrialSpec member_spec(const Options& o, const std::string& model, int member) {
  spec::TrialSpec spec;
  spec.model.family = model;
  spec.model.depth = 2;
  spec.model.width = o.width;
  spec.model.activation = "relu";
  spec.model.stages = o.stages;
  spec.model.blocks = o.blocks;
  spec.batch_size = o.batch;
  spec.optimizer.name = o.optimizer;
  // A spread a random search would draw; only the values differ, never the shapes.
  spec.optimizer.lr = (spec::optimizer_row(o.optimizer).adaptive ? 0.0003 : 0.003) * std::pow(1.5, member % 8);
  spec.optimizer.momentum = member % 2 == 0 ? 0.9 : 0.5;
  spec.optimizer.weight_decay = member % 3 == 0 ? 1e-4 : 0.0;
  return spec;
}

std::vector<int> member_ids(int k) {
  std::vector<int> ids(static_cast<std::size_t>(k));
  for (int i = 0; i < k; ++i) ids[static_cast<std::size_t>(i)] = i;
  return ids;
}

double train_flops_per_sample(const spec::ModelSpec& spec, const spec::InputShape& input) {
  return 3.0 * forward_flops_per_sample(spec, input);
}

}  // namespace packtune::bench
