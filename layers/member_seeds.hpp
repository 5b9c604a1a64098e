#pragma once
// The per-member random seeds of one forward pass, for layers that draw (Dropout). The engine
// opens a MemberSeeds scope around each training forward with one seed per member, derived
// from the member's own seed and step; every draw inside is a function of that seed, the
// draw's position in the forward (its call index) and the element's coordinates. A member
// therefore gets the same masks alone or fused, padded or not, on any device, and a step
// replayed as a CUDA graph reads the seeds from a tensor that changes between replays.
#include <cstdint>
#include <vector>

#include <torch/torch.h>

namespace packtune::layers {

class MemberSeeds {
 public:
  // `seeds`: [K] int64 on the activations' device, each in [0, 2^32). The scope is this
  // thread's until it is destroyed; scopes do not nest.
  explicit MemberSeeds(torch::Tensor seeds);
  ~MemberSeeds();
  MemberSeeds(const MemberSeeds&) = delete;
  MemberSeeds& operator=(const MemberSeeds&) = delete;

  // The open scope of this thread, or nullptr.
  static MemberSeeds* current();
  // [K, 1] seeds for the next draw, each mixed with the draw's call index.
  torch::Tensor next_draw();

 private:
  torch::Tensor seeds_;
  std::int64_t calls_ = 0;
  MemberSeeds* previous_ = nullptr;
};

// A 32-bit integer hash of every element (int64 tensors holding values in [0, 2^32)), with
// products that stay below 2^63.
torch::Tensor mix32(torch::Tensor x);

// Uniform draws in [0, 2^32) for a [K, B, ...] activation of `sizes`, one per element, from
// [K, 1] seeds: the hash of the seed and the element's coordinates after the member dimension.
torch::Tensor coordinate_hash(const torch::Tensor& seeds, at::IntArrayRef sizes);

}  // namespace packtune::layers
