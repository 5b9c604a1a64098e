#include "layer_check.hpp"
#include "layers/layer_norm.hpp"

using namespace packtune;
using namespace packtune::testing;

namespace {

Member norm_member(std::uint64_t seed, std::int64_t width, bool affine) {
  auto member = make_member(
      seed, [&] { return torch::nn::LayerNorm(torch::nn::LayerNormOptions({width}).elementwise_affine(affine)); },
      [&] { return std::make_shared<layers::LayerNorm>(width, 1e-5, affine); },
      [](torch::nn::LayerNorm& m, const torch::Tensor& x) { return m(x); }, torch::randn({4, 3, width}) * 2 + 1);
  if (affine) {
    // Scale and shift other than ones and zeros, the same for the member and its reference.
    torch::NoGradGuard no_grad;
    auto w = torch::rand({width}) + 0.5, b = torch::randn({width});
    member.solo->named_parameters()["weight"].copy_(w);
    member.solo->named_parameters()["bias"].copy_(b);
    member.layer->named_parameters()["weight"][0].copy_(w);
    member.layer->named_parameters()["bias"][0].copy_(b);
  }
  return member;
}

std::vector<Member> three(bool affine) {
  return {norm_member(1, 4, affine), norm_member(2, 8, affine), norm_member(3, 6, affine)};
}

}  // namespace

TEST_CASE("layers::LayerNorm equals torch::nn::LayerNorm alone and fused with unlike widths", "[layers]") {
  for (bool affine : {true, false}) {
    INFO("elementwise_affine " << affine);
    check_fused({norm_member(1, 6, affine)});
    auto fused = check_fused(three(affine));
    check_keep(*fused.layer, {torch::randn({4, 3, 4}), torch::randn({4, 3, 8}), torch::randn({4, 3, 6})}, {0, 2});
    // The batched computation (a GPU's), here on the test device too: statistics over each
    // member's own features only.
    FusedCheck batched;
    batched.fused_forward = [](layers::Layer& layer, const torch::Tensor& x) {
      return dynamic_cast<layers::LayerNorm&>(layer).batched(x);
    };
    check_fused({norm_member(1, 6, affine)}, batched);
    check_fused(three(affine), batched);
    // Equal widths: LibTorch's layer_norm, then the members' scale and shift.
    check_fused({norm_member(1, 6, affine), norm_member(2, 6, affine)}, batched);
  }
}

TEST_CASE("layers::LayerNorm keeps its widths through keep() and refuses another eps", "[layers]") {
  auto a = std::make_shared<layers::LayerNorm>(4);
  layers::LayerNorm b(8), c(6);
  a->append(b);
  a->append(c);
  CHECK(a->width(1) == 8);
  a->keep({0, 2});
  CHECK(a->width(1) == 6);
  CHECK(a->stacked_parameters().front().tensor.sizes() == at::IntArrayRef({2, 6}));
  layers::LayerNorm other_eps(4, 1e-6);
  CHECK_THROWS_AS(a->append(other_eps), Error);
  CHECK_THROWS_AS(layers::LayerNorm(torch::nn::LayerNorm(torch::nn::LayerNormOptions({2, 3}))), InputError);
}
