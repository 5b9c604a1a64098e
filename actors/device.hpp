#pragma once
// Devices and CPU threads for an actor. Header free of LibTorch so the driver can validate.
#include <cstdint>
#include <string>

#include "spec/device_syntax.hpp"

namespace packtune::actors {

inline constexpr std::int64_t kMaxRetainedHeapBytes = std::int64_t{512} << 20;

// The concrete device the actor with index `actor_index` trains on: "cpu" or "cuda:N".
// "cuda" spreads actors over the visible GPUs; "auto" picks CUDA when available. Throws
// InputError when CUDA is requested but this LibTorch build or machine has none.
std::string resolve_device(const std::string& requested, int actor_index);

int cuda_device_count();

// A GPU's memory as an actor's Ready reports it: the device's total, and what this process's
// caching allocator holds there (the data set, right after loading it). Zeros for a CPU device
// or without a CUDA LibTorch.
struct GpuMemory {
  std::int64_t total_bytes = 0;
  std::int64_t held_bytes = 0;
};
GpuMemory gpu_memory(const std::string& device);

// Limits LibTorch's intra-op threads and OpenBLAS's threads so that their product stays at
// `threads`: BLAS calls made from torch's worker threads would otherwise each spawn a full
// OpenBLAS pool and oversubscribe the cores. Calls use_reproducible_blas.
void configure_cpu_threads(int threads);

// "LibTorch 2.15.0, BLAS mkl, CPU kernels AVX512": which LibTorch this process trains with,
// from its build settings. On a CPU its speed hangs on these: the same MLP step can take 3x
// longer in a LibTorch of generic BLAS and AVX2 kernels than in one of MKL and AVX-512
// (docs/building.md).
std::string libtorch_summary();

// Makes a run on `device` repeat bit for bit (the config's "deterministic"): on a CUDA device
// cuDNN's deterministic algorithms without benchmark mode, LibTorch's deterministic algorithms
// (an op that has none warns once in the actor's log, and runs), and cuBLAS's fixed workspace
// (CUBLAS_WORKSPACE_CONFIG=:4096:8 unless set, before cuBLAS starts). Nothing on a CPU, whose
// runs repeat already: its settings stay as the bit-exact tests know them.
void make_deterministic(const std::string& device);

// cuDNN's benchmark mode on a CUDA device unless PACKTUNE_CUDNN_BENCHMARK=0: each convolution
// shape times cuDNN's algorithms at its first call and keeps the fastest, where the default
// heuristics pick slow ones for a fused unit's grouped convolutions. On an H200 it made a fused
// ResNet step 1.21x faster at K = 8 and 1.09x at K = 1 (docs/benchmarks.md, GPU figures); the
// first steps of each shape pay the search. A deterministic run never calls this.
// Returns whether it is on.
bool use_cudnn_benchmark(const std::string& device);

// The device's model as the throughput profile cache keys it: a GPU's name ("NVIDIA H200"), or
// the CPU's model name with the actor's threads, since a CPU step's time hangs on both.
std::string device_model(const std::string& device, int threads);
// libtorch_summary(), and for a CUDA device the CUDA runtime and cuDNN versions.
std::string build_summary(const std::string& device);

// Puts MKL (PyPI's LibTorch) in its strict reproducibility mode, so that packing never
// changes a product's bits. An environment variable: call it first in main(), before any
// thread starts or a model plugin could run a product (configure_cpu_threads calls it too,
// for programs that train without an actor's main).
void use_reproducible_blas();

// LibTorch's CPU tensors come from malloc, and glibc serves blocks above its mmap threshold
// (128 KiB at first) with fresh mappings, returned to the kernel on free. A pack's
// activations are megabytes, so every step page-faulted and zero-filled them anew: a quarter
// of the CPU samples of a 16-MLP fused pack under perf, and 1.5x its throughput once freed
// blocks stay in the heap for reuse. Call once per training process (later calls keep the
// first call's figure).
//
// What the heap keeps is memory the process holds but no tensor counts, so an actor adds it
// to its base (what it holds before any trial) and the planner leaves it out of the share
// for trials: the most glibc keeps free at the top of a heap before giving it back (its trim
// threshold) is `retained_bytes`.
void keep_large_blocks_in_heap(std::int64_t retained_bytes = kMaxRetainedHeapBytes);

// The retained heap allowed for an actor whose memory is `capacity_bytes` (0: unknown):
// an eighth of it, at most 512 MiB, and no less than 1 MiB. Step buffers reused from the
// heap already pay at a few MiB; more than an eighth of a small actor's memory would crowd
// out its trials.
std::int64_t retained_heap_bytes(std::int64_t capacity_bytes);

}  // namespace packtune::actors
