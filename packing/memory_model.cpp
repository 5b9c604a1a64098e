#include "packing/memory_model.hpp"

#include <algorithm>
#include <cmath>

namespace packtune::packing {
namespace {

// Fitted to MemoryMeter's counts (MLP and CNN, batch 32-512, K = 1 and 4): the activations
// the model counts are ~10% more than autograd keeps once in-place ops share buffers.
constexpr double kActivationShare = 0.9;

// Temporaries of the largest weight during an optimizer step: the fused optimizer, which
// trains every unit, a trial alone too, works on whole [K, ...] tensors (SGD: the scaled
// update; Adam and AdamW: the bias-corrected moments and the update). Fitted to MemoryMeter's
// counts at K = 1 and 4 (tests/actors/trial_shape_test.cpp).
double optimizer_temporaries(const TrialShape& s) { return s.adaptive ? 4.0 : 1.0; }

}  // namespace

UnitEstimate formula_estimate(const TrialShape& s, int members) {
  const double k = std::max(1, members);
  const double value = s.bytes_per_value;
  const bool fused = members > 1;
  UnitEstimate e;
  // A pack fetches every member's batch before any unit steps, so where members read their
  // own, all of them are live while each unit steps: persistent, not transient. A unit alone
  // is then high by the one batch the fit already absorbs, never low.
  const double state = static_cast<double>(s.parameters) * (2 + s.optimizer_slots);
  e.persistent = static_cast<std::int64_t>(k * (state + static_cast<double>(s.own_batch_values)) * value);
  const double largest = k * static_cast<double>(s.largest_parameter) * value;
  const double backward = kActivationShare * k * static_cast<double>(s.activations_per_sample) * s.batch_size * value +
                          (fused ? largest : 0.0);
  const double step = optimizer_temporaries(s) * largest;
  e.transient = static_cast<std::int64_t>(std::max(backward, step));
  return e;
}

double MemoryModel::correction(const std::string& key) const {
  auto it = correction_.find(key);
  return it == correction_.end() ? 1.0 : it->second;
}

UnitEstimate MemoryModel::estimate(const TrialShape& shape, int members) const {
  auto e = shape.memory_unknown ? measured_estimate(shape, members) : formula_estimate(shape, members);
  const double c = correction(shape.key) * scale_;
  if (c != 1.0) {
    e.persistent = static_cast<std::int64_t>(std::ceil(static_cast<double>(e.persistent) * c));
    e.transient = static_cast<std::int64_t>(std::ceil(static_cast<double>(e.transient) * c));
  }
  return e;
}

UnitEstimate MemoryModel::measured_estimate(const TrialShape& shape, int members) const {
  UnitEstimate e;
  auto it = member_bytes_.find(shape.key);
  if (it != member_bytes_.end()) e.persistent = std::max(1, members) * it->second;
  return e;
}

void MemoryModel::record_measurement(const TrialShape& shape, int members, std::int64_t peak_bytes) {
  if (shape.memory_unknown) {
    // No formula to divide by: the bytes themselves, per member, never lowered.
    if (peak_bytes <= 0) return;
    const std::int64_t per_member = (peak_bytes + std::max(1, members) - 1) / std::max(1, members);
    auto& bytes = member_bytes_[shape.key];
    bytes = std::max(bytes, per_member);
    measured_[shape.key] = true;
    return;
  }
  const auto formula = formula_estimate(shape, members).peak();
  if (formula <= 0 || peak_bytes <= 0) return;
  // Conservative: a later measurement (or an out-of-memory correction) never lowers a
  // shape's figure below what was already seen.
  const double measured = static_cast<double>(peak_bytes) / static_cast<double>(formula);
  auto it = correction_.find(shape.key);
  correction_[shape.key] = it == correction_.end() ? measured : std::max(measured, it->second);
  measured_[shape.key] = true;
}

void MemoryModel::correct_upward(const std::string& key, double factor) {
  correction_[key] = correction(key) * std::max(1.0, factor);
}

}  // namespace packtune::packing
