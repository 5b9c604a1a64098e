#pragma once
// The device the training tests run on: $PACKTUNE_TEST_DEVICE (cuda on a GPU machine, where
// the fused steps are then replayed as CUDA graphs), else the CPU.
#include <cstdlib>

#include <torch/torch.h>

namespace packtune::testing {

inline torch::Device test_device() {
  const char* name = std::getenv("PACKTUNE_TEST_DEVICE");
  const torch::Device device = name != nullptr && *name != '\0' ? torch::Device(name) : torch::Device(torch::kCPU);
  // Fused and solo training are compared to 1e-4: no TF32 in cuDNN's convolutions, whose
  // algorithms differ between a grouped and a plain convolution (matmuls default to fp32).
  if (device.is_cuda()) at::globalContext().setAllowTF32CuDNN(false);
  return device;
}

}  // namespace packtune::testing
