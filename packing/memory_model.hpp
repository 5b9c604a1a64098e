#pragma once
// The memory a trial needs on its actor, from its shape alone: parameters, gradients and
// optimizer state, plus the activations autograd keeps for one batch. Pure arithmetic, so
// the planner can be tested and simulated without a device.
#include <cstdint>

namespace packtune::packing {

struct TrialShape {
  std::int64_t parameters = 0;
  std::int64_t activations_per_sample = 0;
  int batch_size = 1;
  int optimizer_slots = 0;  // per-parameter state tensors: SGD+momentum 1, Adam 2
  int bytes_per_value = 4;  // float32
};

std::int64_t estimate_bytes(const TrialShape& shape);

}  // namespace packtune::packing
