#include "layer_check.hpp"
#include "layers/activation.hpp"
#include "layers/linear.hpp"
#include "layers/residual.hpp"
#include "layers/sequential.hpp"

using namespace packtune;
using namespace packtune::testing;

namespace {

// body(x) + x, or body(x) + shortcut(x), written by hand with LibTorch's modules.
struct SoloResidual : torch::nn::Module {
  SoloResidual(std::int64_t in, std::int64_t hidden, std::int64_t out, bool project) {
    // One after the other: the order in which a call's arguments are built is unspecified.
    torch::nn::Linear first(in, hidden);
    torch::nn::Linear second(hidden, out);
    body = register_module("body", torch::nn::Sequential(first, torch::nn::ReLU(), second));
    if (project) shortcut = register_module("shortcut", torch::nn::Linear(in, out));
  }
  torch::Tensor forward(const torch::Tensor& x) { return body->forward(x) + (shortcut ? shortcut(x) : x); }
  torch::nn::Sequential body;
  torch::nn::Linear shortcut{nullptr};
};

Member residual_member(std::uint64_t seed, std::int64_t in, std::int64_t hidden, std::int64_t out, bool project) {
  return make_member(
      seed, [&] { return std::make_shared<SoloResidual>(in, hidden, out, project); },
      [&] {
        auto body = std::make_shared<layers::Sequential>();
        body->emplace<layers::Linear>(in, hidden);
        body->emplace<layers::Activation>("relu");
        body->emplace<layers::Linear>(hidden, out);
        std::shared_ptr<layers::Layer> shortcut;
        if (project) shortcut = std::make_shared<layers::Linear>(in, out);
        return std::make_shared<layers::Residual>(body, shortcut);
      },
      [](std::shared_ptr<SoloResidual>& m, const torch::Tensor& x) { return m->forward(x); }, torch::randn({4, in}));
}

}  // namespace

TEST_CASE("layers::Residual equals the same sum written by hand", "[layers]") {
  SECTION("identity shortcut") {
    check_fused({residual_member(1, 4, 6, 4, false)});
    auto fused = check_fused({residual_member(1, 4, 6, 4, false), residual_member(2, 7, 5, 7, false),
                              residual_member(3, 5, 9, 5, false)});
    check_keep(*fused.layer, {torch::randn({4, 4}), torch::randn({4, 7}), torch::randn({4, 5})}, {0, 2});
  }
  SECTION("projected shortcut") {
    check_fused({residual_member(1, 4, 6, 3, true)});
    auto fused = check_fused({residual_member(1, 4, 6, 3, true), residual_member(2, 7, 5, 8, true),
                              residual_member(3, 5, 9, 4, true)});
    CHECK(fused.layer->stacked_parameters().back().name == "shortcut.bias");
    check_keep(*fused.layer, {torch::randn({4, 4}), torch::randn({4, 7}), torch::randn({4, 5})}, {0, 2});
  }
}
