#pragma once
// A made-up MLP shape for the driver's planning tests: what the planner reads of a trial.
#include <string>

#include "packing/memory_model.hpp"

namespace packtune::testing {

inline packing::TrialShape mlp_shape(int width, const std::string& family = "mlp") {
  packing::TrialShape s;
  s.key = family + "-" + std::to_string(width);
  s.fusion = family;  // widths of one architecture fuse
  s.parameters = 784 * width + width * 10;
  s.largest_parameter = 784 * width;
  s.activations_per_sample = 2 * width;
  s.flops_per_sample = 2 * s.parameters;
  s.batch_size = 128;
  return s;
}

}  // namespace packtune::testing
