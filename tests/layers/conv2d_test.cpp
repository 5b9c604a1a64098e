#include "layer_check.hpp"
#include "layers/conv2d.hpp"

using namespace packtune;
using namespace packtune::testing;

namespace {

Member conv_member(std::uint64_t seed, std::int64_t in, std::int64_t out, std::int64_t kernel, std::int64_t stride,
                   std::int64_t padding, bool bias) {
  return make_member(
      seed,
      [&] {
        return torch::nn::Conv2d(
            torch::nn::Conv2dOptions(in, out, kernel).stride(stride).padding(padding).bias(bias));
      },
      [&] { return std::make_shared<layers::Conv2d>(in, out, kernel, stride, padding, bias); },
      [](torch::nn::Conv2d& m, const torch::Tensor& x) { return m(x); }, torch::randn({2, in, 7, 7}));
}

}  // namespace

TEST_CASE("layers::Conv2d equals torch::nn::Conv2d alone and fused with unlike channels", "[layers]") {
  struct Geometry {
    std::int64_t kernel, stride, padding;
    bool bias;
  };
  for (auto g : {Geometry{3, 1, 1, true}, Geometry{3, 2, 0, false}, Geometry{1, 1, 0, true}}) {
    INFO("kernel " << g.kernel << ", stride " << g.stride << ", padding " << g.padding << ", bias " << g.bias);
    check_fused({conv_member(1, 3, 4, g.kernel, g.stride, g.padding, g.bias)});
    auto fused = check_fused({conv_member(1, 2, 3, g.kernel, g.stride, g.padding, g.bias),
                              conv_member(2, 4, 5, g.kernel, g.stride, g.padding, g.bias),
                              conv_member(3, 3, 4, g.kernel, g.stride, g.padding, g.bias)});
    std::vector<torch::Tensor> inputs;
    for (std::int64_t in : {2, 4, 3}) inputs.push_back(torch::randn({2, in, 7, 7}));
    check_keep(*fused.layer, inputs, {0, 2});
    CHECK(fused.layer->stacked_parameters().front().tensor.sizes().slice(0, 3) == at::IntArrayRef({2, 4, 3}));
  }
  // One input channel: the depthwise case, member by member on every device.
  check_fused({conv_member(1, 1, 2, 3, 1, 1, true), conv_member(2, 1, 4, 3, 1, 1, true)});
}

TEST_CASE("layers::Conv2d fuses only members of one kernel size, stride and padding", "[layers]") {
  auto conv = [](std::int64_t kernel, std::int64_t stride, std::int64_t padding) {
    return std::make_shared<layers::Conv2d>(2, 3, kernel, stride, padding);
  };
  CHECK_THROWS_AS(conv(3, 1, 1)->append(*conv(1, 1, 1)), Error);
  CHECK_THROWS_AS(conv(3, 1, 1)->append(*conv(3, 2, 1)), Error);
  CHECK_THROWS_AS(conv(3, 1, 1)->append(*conv(3, 1, 0)), Error);
  auto fused = conv(3, 1, 1);
  fused->append(*std::make_shared<layers::Conv2d>(4, 5, 3, 1, 1));
  CHECK(fused->members() == 2);
}
