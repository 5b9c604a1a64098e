#pragma once
// Every difference between the LibTorch versions packtune builds with lives here: Debian's 1.13
// (CPU, what CI uses first) and 2.x (PyPI's CUDA wheels). The versions in the comments say when
// PyTorch changed the API; the builds tested are 1.13 and 2.15.
#include <string>

#include <ATen/autocast_mode.h>
#include <c10/core/Allocator.h>
#include <torch/optim/optimizer.h>
#include <torch/version.h>

#define PACKTUNE_TORCH_AT_LEAST(major, minor) \
  (TORCH_VERSION_MAJOR > (major) || (TORCH_VERSION_MAJOR == (major) && TORCH_VERSION_MINOR >= (minor)))

namespace packtune::actors::torch_compat {

// c10::Allocator::allocate lost its const in 2.3, when allocators also had to implement
// copy_data (which default_copy_data does for memory the CPU can address). Derive from this
// class and implement allocate_bytes() instead of allocate().
class Allocator : public c10::Allocator {
 public:
#if PACKTUNE_TORCH_AT_LEAST(2, 3)
  c10::DataPtr allocate(std::size_t n) override { return allocate_bytes(n); }
  void copy_data(void* dest, const void* src, std::size_t count) const override {
    default_copy_data(dest, src, count);
  }
#else
  c10::DataPtr allocate(std::size_t n) const override { return allocate_bytes(n); }
#endif

 protected:
  virtual c10::DataPtr allocate_bytes(std::size_t n) const = 0;
};

// The key of a parameter's entry in torch::optim::Optimizer::state(): a string of the address of
// the parameter's TensorImpl until 2.2, the address itself since.
#if PACKTUNE_TORCH_AT_LEAST(2, 2)
inline void* optimizer_state_key(const at::Tensor& parameter) { return parameter.unsafeGetTensorImpl(); }
#else
inline std::string optimizer_state_key(const at::Tensor& parameter) {
  return c10::guts::to_string(parameter.unsafeGetTensorImpl());
}
#endif

// Zeroes the gradients in place, keeping their buffers: what 1.13's zero_grad() does, whereas
// 2.0's frees them by default. Solo trials then hold their memory as fused ones do
// (FusedGroup zeroes in place) and as the memory model counts it: gradients persist, and
// backward's fresh gradient of the largest weight is a transient on top, accumulated into
// them. Freed gradients made a solo MLP at batch 32 measure 1/1.165 of the estimate on 2.x.
inline void zero_grad_in_place(torch::optim::Optimizer& optimizer) {
#if TORCH_VERSION_MAJOR >= 2
  optimizer.zero_grad(/*set_to_none=*/false);
#else
  optimizer.zero_grad();
#endif
}

// Autocast's switch and lower-precision type per device: one function taking the device type
// since 2.4; 1.13 has one pair per device (set_enabled and ..._gpu_dtype for CUDA).
inline bool autocast_enabled(c10::DeviceType type) {
#if PACKTUNE_TORCH_AT_LEAST(2, 4)
  return at::autocast::is_autocast_enabled(type);
#else
  return type == c10::DeviceType::CUDA ? at::autocast::is_enabled() : at::autocast::is_cpu_enabled();
#endif
}
inline at::ScalarType autocast_dtype(c10::DeviceType type) {
#if PACKTUNE_TORCH_AT_LEAST(2, 4)
  return at::autocast::get_autocast_dtype(type);
#else
  return type == c10::DeviceType::CUDA ? at::autocast::get_autocast_gpu_dtype() : at::autocast::get_autocast_cpu_dtype();
#endif
}
inline void set_autocast(c10::DeviceType type, bool enabled, at::ScalarType dtype) {
#if PACKTUNE_TORCH_AT_LEAST(2, 4)
  at::autocast::set_autocast_enabled(type, enabled);
  at::autocast::set_autocast_dtype(type, dtype);
#else
  if (type == c10::DeviceType::CUDA) {
    at::autocast::set_enabled(enabled);
    at::autocast::set_autocast_gpu_dtype(dtype);
  } else {
    at::autocast::set_cpu_enabled(enabled);
    at::autocast::set_autocast_cpu_dtype(dtype);
  }
#endif
}

}  // namespace packtune::actors::torch_compat
