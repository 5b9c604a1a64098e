#include "packing/memory_model.hpp"

namespace packtune::packing {

std::int64_t estimate_bytes(const TrialShape& s) {
  // weights + gradients + optimizer state
  const std::int64_t state = s.parameters * (2 + s.optimizer_slots);
  // activations kept for backward, and their gradients during backward
  const std::int64_t activations = 2 * s.activations_per_sample * s.batch_size;
  return (state + activations) * s.bytes_per_value;
}

}  // namespace packtune::packing
