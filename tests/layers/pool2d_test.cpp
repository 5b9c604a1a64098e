#include "layer_check.hpp"
#include "layers/pool2d.hpp"

using namespace packtune;
using namespace packtune::testing;

namespace {

template <class Solo, class Options>
Member pool_member(const Options& options, std::int64_t channels) {
  Solo solo(options);
  return {std::make_shared<layers::Pool2d>(options), solo.ptr(),
          [solo](const torch::Tensor& x) mutable { return solo(x); }, torch::randn({2, channels, 8, 8})};
}

template <class Solo, class Options>
void check_pool(const Options& options) {
  check_fused({pool_member<Solo>(options, 3)});
  auto fused = check_fused({pool_member<Solo>(options, 2), pool_member<Solo>(options, 5), pool_member<Solo>(options, 3)});
  check_keep(*fused.layer, {torch::randn({2, 2, 8, 8}), torch::randn({2, 5, 8, 8}), torch::randn({2, 3, 8, 8})}, {0, 2});
}

}  // namespace

TEST_CASE("layers::Pool2d equals MaxPool2d, AvgPool2d and AdaptiveAvgPool2d alone and fused", "[layers]") {
  SECTION("max") {
    check_pool<torch::nn::MaxPool2d>(torch::nn::MaxPool2dOptions(2));
    check_pool<torch::nn::MaxPool2d>(torch::nn::MaxPool2dOptions(3).stride(2).padding(1));
  }
  SECTION("average") {
    check_pool<torch::nn::AvgPool2d>(torch::nn::AvgPool2dOptions(2));
    check_pool<torch::nn::AvgPool2d>(torch::nn::AvgPool2dOptions(3).stride(2).padding(1).count_include_pad(false));
  }
  SECTION("adaptive average") {
    check_pool<torch::nn::AdaptiveAvgPool2d>(torch::nn::AdaptiveAvgPool2dOptions(1));
    check_pool<torch::nn::AdaptiveAvgPool2d>(torch::nn::AdaptiveAvgPool2dOptions(3));
  }
}

TEST_CASE("layers::Pool2d fuses only members of one kind of pooling and equal options", "[layers]") {
  using torch::nn::AdaptiveAvgPool2dOptions;
  using torch::nn::AvgPool2dOptions;
  using torch::nn::MaxPool2dOptions;
  auto pool = [](const auto& options) { return std::make_shared<layers::Pool2d>(options); };
  CHECK_THROWS_AS(pool(MaxPool2dOptions(2))->append(*pool(AvgPool2dOptions(2))), Error);
  CHECK_THROWS_AS(pool(AvgPool2dOptions(2))->append(*pool(AdaptiveAvgPool2dOptions(2))), Error);
  CHECK_THROWS_AS(pool(MaxPool2dOptions(2))->append(*pool(MaxPool2dOptions(3))), Error);
  CHECK_THROWS_AS(pool(MaxPool2dOptions(3))->append(*pool(MaxPool2dOptions(3).stride(2))), Error);
  CHECK_THROWS_AS(pool(AvgPool2dOptions(3))->append(*pool(AvgPool2dOptions(3).count_include_pad(false))), Error);
  CHECK_THROWS_AS(pool(AdaptiveAvgPool2dOptions(1))->append(*pool(AdaptiveAvgPool2dOptions(3))), Error);
  auto fused = pool(MaxPool2dOptions(3).stride(2).padding(1));
  fused->append(*pool(MaxPool2dOptions(3).stride(2).padding(1)));
  CHECK(fused->members() == 2);
}
