#pragma once
// The device the training tests run on: $PACKTUNE_TEST_DEVICE (cuda on a GPU machine, where
// the fused steps are then replayed as CUDA graphs), else the CPU; and the member kernels a
// test forces on it.
#include <cstdlib>

#include <torch/torch.h>

#include "layers/layer.hpp"

namespace packtune::testing {

inline torch::Device test_device() {
  const char* name = std::getenv("PACKTUNE_TEST_DEVICE");
  const torch::Device device = name != nullptr && *name != '\0' ? torch::Device(name) : torch::Device(torch::kCPU);
  // Fused and solo training are compared to 1e-4: no TF32 in cuDNN's convolutions, whose
  // algorithms differ between a grouped and a plain convolution (matmuls default to fp32).
  if (device.is_cuda()) at::globalContext().setAllowTF32CuDNN(false);
  return device;
}

// Forces `kernels` (layers::set_member_kernels) and restores the default however a test case
// ends, a failed REQUIRE included: the setting is global and would leak into later cases.
struct MemberKernelsScope {
  explicit MemberKernelsScope(layers::MemberKernels kernels) { layers::set_member_kernels(kernels); }
  ~MemberKernelsScope() { layers::set_member_kernels(layers::MemberKernels::Auto); }
  MemberKernelsScope(const MemberKernelsScope&) = delete;
  MemberKernelsScope& operator=(const MemberKernelsScope&) = delete;
};

}  // namespace packtune::testing
