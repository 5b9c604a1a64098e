#include "layer_check.hpp"
#include "layers/batch_norm.hpp"

using namespace packtune;
using namespace packtune::testing;

namespace {

template <class Solo>
Member bn_member(std::uint64_t seed, std::int64_t c, int spatial, Shape input) {
  return make_member(
      seed, [&] { return Solo(torch::nn::BatchNormOptions(c)); },
      [&] { return std::make_shared<layers::BatchNorm>(torch::nn::BatchNormOptions(c), spatial); },
      [](Solo& m, const torch::Tensor& x) { return m(x); }, torch::randn(input) * 2 + 0.5);
}

// Trains both a few forwards (running statistics), then compares the buffers and eval().
template <class Solo>
void check_batch_norm(int spatial, const std::vector<std::int64_t>& channels, Shape rest) {
  std::vector<Member> members;
  std::vector<torch::Tensor> inputs;
  for (std::size_t i = 0; i < channels.size(); ++i) {
    Shape shape{6, channels[i]};
    shape.insert(shape.end(), rest.begin(), rest.end());
    members.push_back(bn_member<Solo>(10 + i, channels[i], spatial, shape));
    inputs.push_back(members.back().input);
  }
  // Non-trivial scale and shift, the same for the member and its reference.
  for (auto& m : members) {
    torch::NoGradGuard no_grad;
    auto w = torch::rand({m.input.size(1)}) + 0.5, b = torch::randn({m.input.size(1)});
    m.solo->named_parameters()["weight"].copy_(w);
    m.solo->named_parameters()["bias"].copy_(b);
    for (auto& p : m.layer->named_parameters()) p.value()[0].copy_(p.key() == "weight" ? w : b);
  }
  auto solos = members;
  auto fused = check_fused(members);
  const auto device = test_device();
  // One forward each has run in train mode: the running statistics moved alike.
  for (std::size_t i = 0; i < solos.size(); ++i) check_state(*fused.layer, static_cast<std::int64_t>(i), *solos[i].solo, tolerance(device));
  fused.layer->eval();
  torch::NoGradGuard no_grad;
  auto y = fused.layer->forward(stack_padded(inputs).to(device));
  for (std::size_t i = 0; i < solos.size(); ++i) {
    solos[i].solo->eval();
    auto expected = solos[i].solo_forward(inputs[i].to(device));
    check_close(layers::own_part(y[static_cast<std::int64_t>(i)], expected.sizes().vec()), expected, tolerance(device), "eval output");
  }
  if (channels.size() == 3) {
    fused.layer->train();
    check_keep(*fused.layer, inputs, {0, 2}, /*train=*/false);
  }
}

}  // namespace

TEST_CASE("layers::BatchNorm equals torch::nn::BatchNorm1d and 2d alone and fused with unlike channels", "[layers]") {
  SECTION("1d over [B, C]") {
    check_batch_norm<torch::nn::BatchNorm1d>(1, {3}, {});
    check_batch_norm<torch::nn::BatchNorm1d>(1, {3, 6, 4}, {});
  }
  SECTION("1d over [B, C, L]") { check_batch_norm<torch::nn::BatchNorm1d>(1, {3, 6, 4}, {5}); }
  SECTION("2d") {
    check_batch_norm<torch::nn::BatchNorm2d>(2, {3}, {4, 4});
    check_batch_norm<torch::nn::BatchNorm2d>(2, {3, 6, 4}, {4, 4});
  }
}

TEST_CASE("layers::BatchNorm fuses only members of one eps and momentum", "[layers]") {
  auto bn = [](std::int64_t c, double eps, double momentum) {
    return std::make_shared<layers::BatchNorm>(torch::nn::BatchNormOptions(c).eps(eps).momentum(momentum), 2);
  };
  CHECK_THROWS_AS(bn(3, 1e-5, 0.1)->append(*bn(3, 1e-3, 0.1)), Error);
  CHECK_THROWS_AS(bn(3, 1e-5, 0.1)->append(*bn(3, 1e-5, 0.01)), Error);
  auto fused = bn(3, 1e-5, 0.1);
  fused->append(*bn(5, 1e-5, 0.1));
  CHECK(fused->members() == 2);
}
