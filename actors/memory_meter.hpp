#pragma once
// Exact accounting of the tensor memory of this process on the CPU. LibTorch allocates every
// CPU tensor through c10's CPU allocator; MemoryMeter puts a counting wrapper in front of
// it, so the planner's memory model can be calibrated against what training really holds
// (parameters, gradients, optimizer state, the activations autograd keeps, workspace) and an
// actor can hold its pack to a memory budget. The process's resident memory would mix that
// with malloc's free lists, which hide one trial's peak behind another's freed pages.
#include <cstdint>
#include <string>

#include "packtune/error.hpp"

namespace packtune::actors {

// Thrown when an allocation would take the pack over its budget, as a GPU throws when its
// memory is full; is_out_of_memory() recognises both.
class OutOfMemoryError : public Error {
 public:
  using Error::Error;
};

bool is_out_of_memory(const std::exception& e);

class MemoryMeter {
 public:
  // Installs the counting allocator (once per process; later calls are free).
  static MemoryMeter& instance();

  std::int64_t current_bytes() const;
  std::int64_t peak_bytes() const;
  // The peak restarts from the current figure.
  void reset_peak();

  // Allocations that would take current_bytes() over `bytes` throw OutOfMemoryError;
  // 0 lifts the limit.
  void set_limit(std::int64_t bytes);
  std::int64_t limit() const;

 private:
  MemoryMeter();
};

// Resets the meter's peak on construction; peak_growth() is the peak since then above the
// bytes held at construction: what the code in between needed at most.
class PeakScope {
 public:
  PeakScope();
  std::int64_t peak_growth() const;

 private:
  std::int64_t base_;
};

}  // namespace packtune::actors
