#include "layer_check.hpp"
#include "layers/dropout.hpp"
#include "layers/member_seeds.hpp"
#include "layers/sequential.hpp"

using namespace packtune;
using namespace packtune::testing;

namespace {

torch::Tensor seeds_of(std::vector<std::int64_t> seeds) {
  return torch::tensor(seeds, torch::kInt64).to(test_device());
}

// `layer`'s output on `x` under a MemberSeeds scope with `seeds`.
torch::Tensor with_seeds(layers::Layer& layer, const torch::Tensor& x, std::vector<std::int64_t> seeds) {
  layers::MemberSeeds scope(seeds_of(std::move(seeds)));
  return layer.forward(x);
}

}  // namespace

TEST_CASE("layers::Dropout is the identity in eval() and at rate 0", "[layers]") {
  const auto device = test_device();
  auto x = torch::randn({2, 4, 5}, device);
  layers::Dropout dropout(0.5);
  dropout.eval();
  CHECK(torch::equal(dropout.forward(x), x));
  layers::Dropout none(0.0);
  CHECK(torch::equal(with_seeds(none, x.narrow(0, 0, 1), {3}), x.narrow(0, 0, 1)));
}

TEST_CASE("layers::Dropout keeps 1 - p of a large tensor, scaled by 1 / (1 - p)", "[layers]") {
  const auto device = test_device();
  for (double p : {0.1, 0.5, 0.8}) {
    INFO("p " << p);
    layers::Dropout dropout(p);
    auto x = torch::rand({1, 1000, 1000}, device) + 1;  // never 0
    auto y = with_seeds(dropout, x, {12345});
    auto kept = y.ne(0);
    const double fraction = kept.to(torch::kFloat64).mean().item<double>();
    CHECK(std::abs(fraction - (1 - p)) < 0.003);  // 1e6 draws: a standard deviation below 5e-4
    const auto scaled = x.masked_select(kept) / static_cast<float>(1 - p);
    check_close(y.masked_select(kept), scaled, 1e-6, "kept values");
    // Without a MemberSeeds scope the seed comes from LibTorch's generator: another mask each time.
    auto a = dropout.forward(x), b = dropout.forward(x);
    CHECK(!torch::equal(a, b));
    CHECK(std::abs(a.ne(0).to(torch::kFloat64).mean().item<double>() - (1 - p)) < 0.003);
  }
}

TEST_CASE("layers::Dropout gives a member the same mask fused as alone", "[layers]") {
  const auto device = test_device();
  const std::vector<double> rates{0.1, 0.5, 0.3};
  const std::vector<std::int64_t> seeds{11, 4000000000, 7};
  const std::vector<std::int64_t> widths{5, 9, 7};
  std::vector<torch::Tensor> inputs;
  for (auto w : widths) inputs.push_back(torch::rand({16, 3, w}) + 1);
  auto fused = std::make_shared<layers::Dropout>(rates[0]);
  for (std::size_t i = 1; i < rates.size(); ++i) {
    layers::Dropout other(rates[i]);
    fused->append(other);
  }
  CHECK(fused->p(1) == 0.5);
  auto y = with_seeds(*fused, stack_padded(inputs).to(device), seeds);
  for (std::size_t i = 0; i < rates.size(); ++i) {
    INFO("member " << i);
    layers::Dropout alone(rates[i]);
    auto own = with_seeds(alone, inputs[i].unsqueeze(0).to(device), {seeds[i]})[0];
    auto mine = y[static_cast<std::int64_t>(i)];
    CHECK(torch::equal(layers::own_part(mine, own.sizes().vec()), own));
    auto rest = mine.clone();
    layers::own_part(rest, own.sizes().vec()).zero_();
    CHECK(rest.abs().max().item<double>() == 0);
  }
  // keep(): the kept members' rates and masks stay theirs.
  fused->keep({0, 2});
  CHECK(fused->p(1) == 0.3);
  auto kept = with_seeds(*fused, stack_padded({inputs[0], inputs[2]}).to(device), {seeds[0], seeds[2]});
  CHECK(kept.size(-1) == 7);
  for (std::size_t j = 0; j < 2; ++j) {
    const auto i = static_cast<std::int64_t>(j == 0 ? 0 : 2);
    auto was = layers::own_part(y[i], inputs[static_cast<std::size_t>(i)].sizes().vec());
    CHECK(torch::equal(layers::own_part(kept[static_cast<std::int64_t>(j)], was.sizes().vec()), was));
  }
}

TEST_CASE("layers::Dropout at rate 0 for one member still keeps the later draws in step", "[layers]") {
  // Member 0 drops nothing at the first dropout; fused with a member that does, its second
  // dropout must draw the mask it draws alone.
  const auto device = test_device();
  auto build = [](double first) {
    auto model = std::make_shared<layers::Sequential>();
    model->emplace<layers::Dropout>(first);
    model->emplace<layers::Dropout>(0.5);
    return model;
  };
  auto fused = build(0.0);
  auto other = build(0.3);
  fused->append(*other);
  auto x = torch::rand({2, 8, 64}, device) + 1;
  auto y = with_seeds(*fused, x, {21, 22});
  auto alone = build(0.0);
  auto own = with_seeds(*alone, x.narrow(0, 0, 1), {21});
  CHECK(torch::equal(y[0], own[0]));
}
