#include "actors/memory_meter.hpp"

#include <algorithm>
#include <atomic>
#include <cstring>

#include <c10/core/CPUAllocator.h>

#include "actors/torch_compat.hpp"

namespace packtune::actors {
namespace {

std::atomic<std::int64_t> current{0};
std::atomic<std::int64_t> peak{0};
std::atomic<std::int64_t> limit_bytes{0};

// Some of LibTorch's kernels (oneDNN) free through the allocator's raw deleter, which gets
// only the address: the context must be the data pointer itself. Each block therefore
// carries its size in a header in front of the data, one alignment unit (64 bytes, c10's)
// long, so counting costs no lookup and no lock on the allocation path.
constexpr std::size_t kHeader = 64;
c10::DeleterFnPtr inner_deleter = nullptr;

void release(void* data) {
  auto* base = static_cast<char*>(data) - kHeader;
  std::int64_t bytes = 0;
  std::memcpy(&bytes, base, sizeof bytes);
  current.fetch_sub(bytes, std::memory_order_relaxed);
  inner_deleter(base);
}

class CountingAllocator final : public torch_compat::Allocator {
 public:
  explicit CountingAllocator(c10::Allocator* inner) : inner_(inner) { inner_deleter = inner->raw_deleter(); }

  c10::DataPtr allocate_bytes(std::size_t n) const override {
    const auto bytes = static_cast<std::int64_t>(n);
    const auto now = current.fetch_add(bytes, std::memory_order_relaxed) + bytes;
    const auto cap = limit_bytes.load(std::memory_order_relaxed);
    if (cap > 0 && now > cap) {
      current.fetch_sub(bytes, std::memory_order_relaxed);
      throw OutOfMemoryError("out of memory: allocating " + std::to_string(n >> 10) + " KiB would take the pack to " +
                             std::to_string(now >> 20) + " MiB, over its budget of " +
                             std::to_string(cap >> 20) + " MiB");
    }
    auto seen = peak.load(std::memory_order_relaxed);
    while (now > seen && !peak.compare_exchange_weak(seen, now, std::memory_order_relaxed)) {
    }
    c10::DataPtr inner;
    try {
      inner = inner_->allocate(n + kHeader);
    } catch (...) {
      current.fetch_sub(bytes, std::memory_order_relaxed);
      throw;
    }
    auto* base = static_cast<char*>(inner.get());
    if (inner.get_context() != base) {
      current.fetch_sub(bytes, std::memory_order_relaxed);
      throw Error("LibTorch's CPU allocator keeps a context apart from its data; the memory meter cannot wrap it");
    }
    const auto device = inner.device();
    inner.release_context();  // freed by release(), through the header
    std::memcpy(base, &bytes, sizeof bytes);
    return {base + kHeader, base + kHeader, &release, device};
  }

  c10::DeleterFnPtr raw_deleter() const override { return &release; }

 private:
  c10::Allocator* inner_;
};

}  // namespace

bool is_out_of_memory(const std::exception& e) {
  if (dynamic_cast<const OutOfMemoryError*>(&e)) return true;
  // LibTorch reports a full GPU as a c10::Error whose text says so; the autograd engine may
  // also rethrow ours with the text kept.
  const char* text = e.what();
  return std::strstr(text, "out of memory") != nullptr;
}

MemoryMeter::MemoryMeter() {
  c10::Allocator* inner = c10::GetCPUAllocator();
  if (inner->raw_deleter() == nullptr) {
    throw Error("LibTorch's CPU allocator has no raw deleter; the memory meter cannot wrap it");
  }
  static CountingAllocator counting(inner);
  // Priority above the default allocator's, so every later CPU tensor is counted.
  c10::SetCPUAllocator(&counting, /*priority=*/1);
}

MemoryMeter& MemoryMeter::instance() {
  static MemoryMeter meter;
  return meter;
}

std::int64_t MemoryMeter::current_bytes() const { return current.load(); }
std::int64_t MemoryMeter::peak_bytes() const { return peak.load(); }
void MemoryMeter::reset_peak() { peak.store(current.load()); }
void MemoryMeter::set_limit(std::int64_t bytes) { limit_bytes.store(std::max<std::int64_t>(0, bytes)); }
std::int64_t MemoryMeter::limit() const { return limit_bytes.load(); }

PeakScope::PeakScope() {
  auto& meter = MemoryMeter::instance();
  meter.reset_peak();
  base_ = meter.current_bytes();
}

std::int64_t PeakScope::peak_growth() const { return MemoryMeter::instance().peak_bytes() - base_; }

}  // namespace packtune::actors
