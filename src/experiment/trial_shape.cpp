#include "experiment/trial_shape.hpp"

#include <algorithm>
#include <cmath>
#include <fstream>

#include "packtune/error.hpp"
#include "spec/declared_families.hpp"
#include "spec/optimizer_table.hpp"

namespace packtune {

spec::InputShape input_dims(const ExperimentConfig& config) {
  const auto data = datasets::data_shape(config.data);
  const auto& s = data.sample_shape;
  spec::InputShape dims;
  dims.outputs = static_cast<int>(data.outputs);
  dims.task = config.data.task;
  dims.images = s.size() == 3;
  if (dims.images) {
    dims.channels = static_cast<int>(s[0]);
    dims.height = static_cast<int>(s[1]);
    dims.width = static_cast<int>(s[2]);
  } else {
    dims.channels = dims.height = 1;
    dims.width = static_cast<int>(s.empty() ? 1 : s[0]);
  }
  dims.own_batches = config.data.order_per_trial || (config.data.augment.any() && config.data.augment.per_trial);
  return dims;
}

bool fuse_pads_widths(const ExperimentConfig& config) { return config.fuse == packing::FuseMode::Always; }

packing::TrialShape trial_shape(const spec::TrialSpec& spec, const spec::InputShape& input, bool padded) {
  const auto m = spec::model_shape(spec.model, input.channels, input.height, input.width, input.outputs);
  packing::TrialShape s;
  s.key = spec::shape_key(spec);
  s.fusion = padded ? spec::fusion_key(spec) : spec::unpadded_fusion_key(spec);
  s.parameters = m.parameters;
  s.largest_parameter = m.largest_parameter;
  s.activations_per_sample = m.activations_per_sample;
  s.flops_per_sample = m.flops_per_sample;
  s.batch_size = spec.batch_size;
  if (input.own_batches) {
    s.own_batch_values = std::int64_t{spec.batch_size} * input.channels * input.height * input.width;
  }
  const auto& optimizer = spec::optimizer_row(spec.optimizer.name);
  s.adaptive = optimizer.adaptive;
  s.weight_decay = spec.optimizer.weight_decay != 0;
  s.optimizer_slots = spec::kept_slots(optimizer, spec.optimizer.momentum);
  s.fuses = spec::fuses(spec.model);
  if (spec::measured_family(spec.model)) {
    // No formula: the planner waits for an actor's measurement, and orders the shapes of
    // one fusion key by the product of their numeric widths.
    s.memory_unknown = true;
    s.width_rank = 1;
    if (const auto* family = spec::DeclaredFamilies::instance().find(spec.model.family)) {
      for (const auto& p : family->hyperparameters) {
        auto it = spec.model.params.find(p.name);
        if (p.role != layers::HyperParameter::Role::Width || it == spec.model.params.end()) continue;
        if (std::holds_alternative<std::int64_t>(it->second) || std::holds_alternative<double>(it->second)) {
          s.width_rank *= std::max<std::int64_t>(1, static_cast<std::int64_t>(tuners::as_number(it->second, p.name)));
        }
      }
    }
  }
  return s;
}

double job_steps(const ExperimentConfig& config, std::int64_t train_images, double budget, int batch_size) {
  if (config.budget_unit == "steps") return budget;
  return budget * std::floor(static_cast<double>(train_images) / batch_size);
}

std::int64_t training_images(const ExperimentConfig& config) {
  return config.budget_unit == "steps" ? 0 : datasets::train_examples(config.data);
}

std::int64_t available_memory_bytes() {
  std::ifstream meminfo("/proc/meminfo");
  std::string name, unit;
  std::int64_t kib = 0;
  while (meminfo >> name >> kib >> unit) {
    if (name == "MemAvailable:") return kib * 1024;
  }
  return 0;
}

}  // namespace packtune
