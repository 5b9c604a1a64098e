#include "actors/device.hpp"

#include <dlfcn.h>
#include <malloc.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <mutex>

#include <ATen/Context.h>
#include <ATen/Parallel.h>
#include <ATen/Version.h>
#include <torch/cuda.h>
#ifdef PACKTUNE_WITH_CUDA
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAGuard.h>
#include <ATen/detail/CUDAHooksInterface.h>
#include <cuda_runtime_api.h>
#endif

#include "packtune/error.hpp"

namespace packtune::actors {

int cuda_device_count() {
  return torch::cuda::is_available() ? static_cast<int>(torch::cuda::device_count()) : 0;
}

std::string resolve_device(const std::string& requested, int actor_index) {
  spec::check_device_syntax(requested);
  if (requested == "cpu") return "cpu";
  const int gpus = cuda_device_count();
  if (requested == "auto") {
    return gpus > 0 ? "cuda:" + std::to_string(actor_index % gpus) : "cpu";
  }
  if (gpus == 0) {
    throw InputError("device: \"" + requested +
                     "\" requested but no CUDA device is visible to this LibTorch build; use "
                     "--device cpu or auto, or build against a CUDA LibTorch");
  }
  if (requested == "cuda") return "cuda:" + std::to_string(actor_index % gpus);
  const int index = std::stoi(requested.substr(5));
  if (index >= gpus) {
    throw InputError("device: " + requested + " does not exist; this machine has " +
                     std::to_string(gpus) + " CUDA device(s)");
  }
  return requested;
}

GpuMemory gpu_memory(const std::string& device) {
  GpuMemory m;
#ifdef PACKTUNE_WITH_CUDA
  const torch::Device d(device);
  if (!d.is_cuda()) return m;
  const auto index = d.has_index() ? d.index() : c10::DeviceIndex{0};
  c10::cuda::CUDAGuard guard(index);
  std::size_t free = 0, total = 0;
  if (cudaMemGetInfo(&free, &total) == cudaSuccess) m.total_bytes = static_cast<std::int64_t>(total);
  // Reserved, not allocated: the allocator's cached blocks are this process's as well. Index 0
  // is the aggregate over pool kinds in every LibTorch 2.x.
  m.held_bytes = c10::cuda::CUDACachingAllocator::getDeviceStats(index).reserved_bytes[0].current;
#else
  (void)device;
#endif
  return m;
}

void use_reproducible_blas() {
  // The MKL inside PyPI's LibTorch runs a lone product on every thread, splitting its inner
  // dimension, but a batch of products one per thread: a trial alone and the same trial in a
  // fused unit then sum in other orders (4e-5 apart on a 64x784x64 product at 2 threads).
  // MKL's strict reproducibility mode makes its products independent of the thread count, at
  // no measured cost (docs/reproducibility.md). MKL reads it at its first product; a value
  // the user set is kept.
  setenv("MKL_CBWR", "AUTO,STRICT", 0);
}

void configure_cpu_threads(int threads) {
  threads = std::max(1, threads);
  // Debian's OpenBLAS (pthread flavour) exports this; the reference BLAS does not, and
  // then there is nothing to limit.
  using SetThreads = void (*)(int);
  if (auto* set = reinterpret_cast<SetThreads>(dlsym(RTLD_DEFAULT, "openblas_set_num_threads"))) {
    set(1);
  }
  use_reproducible_blas();
  at::set_num_threads(threads);
  try {
    at::set_num_interop_threads(1);
  } catch (const std::exception&) {
    // Already set once in this process; the first value stands.
  }
}

std::string libtorch_summary() {
  const std::string config = at::show_config();
  // A value of show_config()'s "KEY=VALUE, " build settings, or its "CPU capability usage: X" line.
  auto after = [&config](const std::string& label, const char* stops) {
    const auto pos = config.find(label);
    if (pos == std::string::npos) return std::string("unknown");
    const auto from = pos + label.size();
    return config.substr(from, config.find_first_of(stops, from) - from);
  };
  return "LibTorch " + after("TORCH_VERSION=", ",\n") + ", BLAS " + after("BLAS_INFO=", ",\n") + ", CPU kernels " +
         after("CPU capability usage: ", "\n");
}

void make_deterministic(const std::string& device) {
  if (!torch::Device(device).is_cuda()) return;
  setenv("CUBLAS_WORKSPACE_CONFIG", ":4096:8", /*overwrite=*/0);
  auto& context = at::globalContext();
  context.setBenchmarkCuDNN(false);
  context.setDeterministicCuDNN(true);
  context.setDeterministicAlgorithms(true, /*warn_only=*/true);
}

bool use_cudnn_benchmark(const std::string& device) {
  const char* value = std::getenv("PACKTUNE_CUDNN_BENCHMARK");
  const bool on = torch::Device(device).is_cuda() && !(value != nullptr && std::string(value) == "0");
  if (on) at::globalContext().setBenchmarkCuDNN(true);
  return on;
}

std::string device_model(const std::string& device, int threads) {
  const torch::Device d(device);
#ifdef PACKTUNE_WITH_CUDA
  if (d.is_cuda()) {
    cudaDeviceProp properties{};
    if (cudaGetDeviceProperties(&properties, d.has_index() ? d.index() : 0) == cudaSuccess) return properties.name;
    return "cuda";
  }
#endif
  if (!d.is_cpu()) return device;
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line, model = "unknown CPU";
  while (std::getline(cpuinfo, line)) {
    if (line.rfind("model name", 0) != 0) continue;
    const auto colon = line.find(':');
    if (colon != std::string::npos) model = line.substr(line.find_first_not_of(' ', colon + 1));
    break;
  }
  return model + ", " + std::to_string(threads) + " thread" + (threads == 1 ? "" : "s");
}

std::string build_summary(const std::string& device) {
  auto summary = libtorch_summary();
#ifdef PACKTUNE_WITH_CUDA
  if (torch::Device(device).is_cuda()) {
    int runtime = 0;
    cudaRuntimeGetVersion(&runtime);
    summary += ", CUDA " + std::to_string(runtime / 1000) + "." + std::to_string(runtime % 1000 / 10) + ", cuDNN " +
               std::to_string(at::detail::getCUDAHooks().versionCuDNN());
  }
#else
  (void)device;
#endif
  return summary;
}

void keep_large_blocks_in_heap(std::int64_t retained_bytes) {
  static std::once_flag once;
  std::call_once(once, [retained_bytes] {
    mallopt(M_MMAP_THRESHOLD, 32 << 20);  // glibc's largest allowed value
    mallopt(M_TRIM_THRESHOLD, static_cast<int>(std::clamp<std::int64_t>(retained_bytes, 0, kMaxRetainedHeapBytes)));
  });
}

std::int64_t retained_heap_bytes(std::int64_t capacity_bytes) {
  if (capacity_bytes <= 0) return kMaxRetainedHeapBytes;
  return std::clamp<std::int64_t>(capacity_bytes / 8, std::int64_t{1} << 20, kMaxRetainedHeapBytes);
}

}  // namespace packtune::actors
