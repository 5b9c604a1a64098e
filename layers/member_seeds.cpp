#include "layers/member_seeds.hpp"

#include "packtune/error.hpp"

namespace packtune::layers {
namespace {

thread_local MemberSeeds* open_scope = nullptr;

constexpr std::int64_t kLow32 = 0xffffffff;

}  // namespace

MemberSeeds::MemberSeeds(torch::Tensor seeds) : seeds_(std::move(seeds)), previous_(open_scope) {
  if (previous_) throw Error("MemberSeeds scopes do not nest");
  open_scope = this;
}

MemberSeeds::~MemberSeeds() { open_scope = previous_; }

MemberSeeds* MemberSeeds::current() { return open_scope; }

torch::Tensor mix32(torch::Tensor x) {
  // Two rounds of a multiply-xorshift hash (0x45d9f3b < 2^27, so no product overflows), in
  // place on `x` (the caller's own tensor): a dropout's draws then take two 64-bit words per
  // element at their peak.
  for (int round = 0; round < 2; ++round) {
    x.bitwise_xor_(x.__rshift__(16));
    x.mul_(0x45d9f3b).bitwise_and_(kLow32);
  }
  return x.bitwise_xor_(x.__rshift__(16));
}

torch::Tensor MemberSeeds::next_draw() {
  const std::int64_t call = calls_++;
  const std::int64_t salt = (call * std::int64_t{0x9e3779b1} + std::int64_t{0x7f4a7c15}) & kLow32;
  return mix32(torch::bitwise_xor(seeds_, salt)).view({-1, 1});
}

torch::Tensor coordinate_hash(const torch::Tensor& seeds, at::IntArrayRef sizes) {
  const auto rank = static_cast<std::int64_t>(sizes.size());
  auto h = seeds.view({sizes[0]});
  std::vector<std::int64_t> shape(sizes.size(), 1);
  shape[0] = sizes[0];
  h = h.view(shape);
  auto options = torch::TensorOptions().dtype(torch::kInt64).device(seeds.device());
  for (std::int64_t d = 1; d < rank; ++d) {
    std::vector<std::int64_t> along(sizes.size(), 1);
    along[static_cast<std::size_t>(d)] = sizes[static_cast<std::size_t>(d)];
    // Each dimension's coordinate enters through its own odd multiplier, so that swapping two
    // coordinates changes the draw.
    auto coord = torch::arange(sizes[static_cast<std::size_t>(d)], options).mul(2 * d + 1).view(along);
    h = mix32((h + coord).bitwise_and_(kLow32));
  }
  return h.expand(sizes);
}

}  // namespace packtune::layers
