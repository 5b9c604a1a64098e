#include "layer_check.hpp"
#include "layers/flatten.hpp"

using namespace packtune;
using namespace packtune::testing;

namespace {

Member flatten_member(std::int64_t channels) {
  torch::nn::Flatten solo;
  return {std::make_shared<layers::Flatten>(), solo.ptr(), [solo](const torch::Tensor& x) mutable { return solo(x); },
          torch::randn({2, channels, 3, 4})};
}

}  // namespace

TEST_CASE("layers::Flatten equals torch::nn::Flatten; a member's features stay a prefix", "[layers]") {
  check_fused({flatten_member(3)});
  auto fused = check_fused({flatten_member(2), flatten_member(5), flatten_member(3)});
  check_keep(*fused.layer, {torch::randn({2, 2, 3, 4}), torch::randn({2, 5, 3, 4}), torch::randn({2, 3, 3, 4})}, {0, 2});
}
