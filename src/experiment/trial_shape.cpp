#include "experiment/trial_shape.hpp"

#include <cmath>
#include <fstream>

#include "packtune/error.hpp"

namespace packtune {

bool fuse_pads_widths(const ExperimentConfig& config) { return config.fuse == packing::FuseMode::Always; }

packing::TrialShape trial_shape(const actors::TrialSpec& spec, const InputDims& input, bool padded) {
  const auto m = actors::model_shape(spec.model, input.channels, input.height, input.width, input.classes);
  packing::TrialShape s;
  s.key = actors::shape_key(spec);
  s.fusion = padded ? actors::fusion_key(spec) : actors::unpadded_fusion_key(spec);
  s.parameters = m.parameters;
  s.largest_parameter = m.largest_parameter;
  s.activations_per_sample = m.activations_per_sample;
  s.flops_per_sample = m.flops_per_sample;
  s.batch_size = spec.batch_size;
  s.adaptive = spec.optimizer.name != "sgd";
  s.weight_decay = spec.optimizer.weight_decay != 0;
  s.optimizer_slots = s.adaptive ? 2 : (spec.optimizer.momentum > 0 ? 1 : 0);
  return s;
}

double job_steps(const ExperimentConfig& config, std::int64_t train_images, double budget, int batch_size) {
  if (config.budget_unit == "steps") return budget;
  return budget * std::floor(static_cast<double>(train_images) / batch_size);
}

std::int64_t training_images(const ExperimentConfig& config) {
  return config.budget_unit == "steps" ? 0 : datasets::train_images(config.data);
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
