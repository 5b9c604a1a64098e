#include "experiment/trial_shape.hpp"

#include <cctype>
#include <cmath>
#include <cstdlib>
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

std::int64_t parse_byte_size(const std::string& text, const std::string& where) {
  const char* begin = text.c_str();
  char* end = nullptr;
  const double value = std::strtod(begin, &end);
  const std::string unit(end);
  double scale = 0;
  if (unit.empty() || unit == "B") scale = 1;
  else if (unit == "KiB") scale = 1024.0;
  else if (unit == "MiB") scale = 1024.0 * 1024;
  else if (unit == "GiB") scale = 1024.0 * 1024 * 1024;
  else if (unit == "TiB") scale = 1024.0 * 1024 * 1024 * 1024;
  else if (unit == "KB") scale = 1e3;
  else if (unit == "MB") scale = 1e6;
  else if (unit == "GB") scale = 1e9;
  else if (unit == "TB") scale = 1e12;
  // strtod also reads hexadecimal, "inf" and leading blanks: none is a size a user means.
  const std::string number(begin, static_cast<std::size_t>(end - begin));
  const bool plain = !number.empty() && (std::isdigit(static_cast<unsigned char>(number[0])) || number[0] == '.') &&
                     number.find_first_of("xX") == std::string::npos;
  // Past 2^62 bytes llround's result is unspecified: such a figure is garbage, not a device.
  if (!plain || end == begin || scale == 0 || !std::isfinite(value) || value * scale < 1 || value * scale > 4.6e18) {
    throw InputError(where + ": \"" + text + "\" is not a memory size; expected a positive number with a unit, e.g. 600MiB or 16GiB");
  }
  return static_cast<std::int64_t>(std::llround(value * scale));
}

}  // namespace packtune
