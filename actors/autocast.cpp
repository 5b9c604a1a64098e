#include "actors/autocast.hpp"

#include <atomic>

#include <ATen/Context.h>

#include "actors/torch_compat.hpp"

namespace packtune::actors {

namespace {

std::atomic<spec::Precision> precision{spec::Precision::Fp32};
std::atomic<bool> cpu_too{false};

}  // namespace

spec::Precision use_precision(spec::Precision requested, const std::string& device) {
  const auto resolved = spec::resolve_precision(requested, device);
  if (torch::Device(device).is_cuda()) {
    // LibTorch's defaults differ by version (cuDNN's TF32 on, cuBLAS's off): set both.
    auto& context = at::globalContext();
    context.setAllowTF32CuBLAS(resolved == spec::Precision::Tf32);
    context.setAllowTF32CuDNN(resolved == spec::Precision::Tf32);
  }
  set_training_precision(resolved);
  return resolved;
}

void set_training_precision(spec::Precision p, bool on_cpu_too) {
  precision = p;
  cpu_too = on_cpu_too;
}

spec::Precision training_precision() { return precision.load(); }

Autocast::Autocast(const torch::Device& device) {
  if (training_precision() != spec::Precision::Bf16 || (!device.is_cuda() && !cpu_too.load())) return;
  active_ = true;
  type_ = device.type();
  was_enabled_ = torch_compat::autocast_enabled(type_);
  was_dtype_ = torch_compat::autocast_dtype(type_);
  was_caching_ = at::autocast::is_autocast_cache_enabled();
  at::autocast::set_autocast_cache_enabled(false);
  torch_compat::set_autocast(type_, true, at::kBFloat16);
  at::autocast::increment_nesting();
}

Autocast::~Autocast() {
  if (!active_) return;
  if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
  torch_compat::set_autocast(type_, was_enabled_, was_dtype_);
  at::autocast::set_autocast_cache_enabled(was_caching_);
}

}  // namespace packtune::actors
