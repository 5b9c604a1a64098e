#pragma once
// The training precision inside the engine (spec/precision.hpp says what each one means). A
// process trains in one precision, set once when it starts, as it trains on one device: TF32 is
// a switch of LibTorch's global context, and bf16 is autocast around every forward pass and
// loss, which FusedGroup opens with an Autocast scope.
#include <string>

#include <torch/torch.h>

#include "spec/precision.hpp"

namespace packtune::actors {

// The actor's setting: resolves `requested` on `device` (bf16 on a CPU is an InputError), sets
// TF32 for CUDA's products and convolutions on or off, and makes the result the process's
// training precision. Returns it.
spec::Precision use_precision(spec::Precision requested, const std::string& device);

// The process's training precision for the engine alone (use_precision's last part). bf16
// autocasts CUDA tensors only, unless `on_cpu_too`: tests and benchmarks run autocast's path on
// a CPU that way, while a GPU actor's memory calibration on its CPU stays float32 (an upper
// bound, and 17x faster there than bf16 on a CPU without bfloat16 units).
void set_training_precision(spec::Precision precision, bool on_cpu_too = false);
spec::Precision training_precision();

// While it lives: autocast to bfloat16 on `device`'s type, when the training precision is bf16
// (on a CPU device only with on_cpu_too); nothing otherwise. Autocast's cast cache is off inside, as CUDA graph capture needs (a cached
// cast would outlive the capture that made it). Nests.
class Autocast {
 public:
  explicit Autocast(const torch::Device& device);
  ~Autocast();
  Autocast(const Autocast&) = delete;
  Autocast& operator=(const Autocast&) = delete;
  bool active() const { return active_; }

 private:
  bool active_ = false;
  c10::DeviceType type_ = c10::DeviceType::CPU;
  bool was_enabled_ = false;
  bool was_caching_ = true;
  at::ScalarType was_dtype_ = at::kFloat;
};

}  // namespace packtune::actors
