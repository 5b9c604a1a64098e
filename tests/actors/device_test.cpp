#include "actors/device.hpp"

#include <torch/version.h>

#include <catch2/catch.hpp>

using packtune::actors::kMaxRetainedHeapBytes;
using packtune::actors::retained_heap_bytes;

TEST_CASE("the heap an actor keeps is an eighth of its memory, 1 MiB to 512 MiB") {
  constexpr std::int64_t MiB = std::int64_t{1} << 20;
  CHECK(retained_heap_bytes(0) == kMaxRetainedHeapBytes);  // unknown memory: glibc's figure as set
  CHECK(retained_heap_bytes(16 * 1024 * MiB) == 512 * MiB);
  CHECK(retained_heap_bytes(4 * 1024 * MiB) == 512 * MiB);
  CHECK(retained_heap_bytes(1024 * MiB) == 128 * MiB);
  CHECK(retained_heap_bytes(10 * MiB) == 10 * MiB / 8);
  CHECK(retained_heap_bytes(4 * MiB) == 1 * MiB);
}

TEST_CASE("the LibTorch summary names this build's version, its BLAS and its CPU kernels") {
  const auto summary = packtune::actors::libtorch_summary();
  INFO(summary);
  const auto version =
      "LibTorch " + std::to_string(TORCH_VERSION_MAJOR) + "." + std::to_string(TORCH_VERSION_MINOR) + ".";
  CHECK(summary.rfind(version, 0) == 0);
  CHECK(summary.find(", BLAS ") != std::string::npos);
  CHECK(summary.find(", CPU kernels ") != std::string::npos);
  CHECK(summary.find("unknown") == std::string::npos);
  CHECK(summary.find('\n') == std::string::npos);
}
