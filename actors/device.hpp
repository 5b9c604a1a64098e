#pragma once
// Devices and CPU threads for an actor. Header free of LibTorch so the driver can validate.
#include <string>

#include "actors/device_syntax.hpp"

namespace packtune::actors {

// The concrete device the actor with index `actor_index` trains on: "cpu" or "cuda:N".
// "cuda" spreads actors over the visible GPUs; "auto" picks CUDA when available. Throws
// InputError when CUDA is requested but this LibTorch build or machine has none.
std::string resolve_device(const std::string& requested, int actor_index);

int cuda_device_count();

// Limits LibTorch's intra-op threads and OpenBLAS's threads so that their product stays at
// `threads`: BLAS calls made from torch's worker threads would otherwise each spawn a full
// OpenBLAS pool and oversubscribe the cores.
void configure_cpu_threads(int threads);

// LibTorch's CPU tensors come from malloc, and glibc serves blocks above its mmap threshold
// (128 KiB at first) with fresh mappings, returned to the kernel on free. A pack's
// activations are megabytes, so every step page-faulted and zero-filled them anew: a quarter
// of the CPU samples of a 16-MLP fused pack under perf, and 1.5x its throughput once freed
// blocks stay in the heap for reuse. Call once per training process (idempotent).
void keep_large_blocks_in_heap();

}  // namespace packtune::actors
