#include "layer_check.hpp"
#include "layers/activation.hpp"

using namespace packtune;
using namespace packtune::testing;

namespace {

// LibTorch's module for each of the library's activations (its defaults: leaky_relu 0.01).
torch::nn::AnyModule solo_activation(const std::string& name) {
  if (name == "relu") return torch::nn::AnyModule(torch::nn::ReLU());
  if (name == "tanh") return torch::nn::AnyModule(torch::nn::Tanh());
  if (name == "gelu") return torch::nn::AnyModule(torch::nn::GELU());
  if (name == "sigmoid") return torch::nn::AnyModule(torch::nn::Sigmoid());
  if (name == "silu") return torch::nn::AnyModule(torch::nn::SiLU());
  if (name == "elu") return torch::nn::AnyModule(torch::nn::ELU());
  return torch::nn::AnyModule(torch::nn::LeakyReLU());
}

Member activation_member(const std::string& name, std::int64_t width) {
  auto solo = solo_activation(name);
  return {std::make_shared<layers::Activation>(name), solo.ptr(),
          [solo](const torch::Tensor& x) mutable { return solo.forward(x); }, torch::randn({4, 3, width}) * 3};
}

}  // namespace

TEST_CASE("layers::Activation equals LibTorch's activation modules alone and fused", "[layers]") {
  for (const auto& name : layers::Activation::names()) {
    INFO("activation " << name);
    FusedCheck check;
    check.padded_outputs_zero = name != "sigmoid";  // sigmoid(0) = 0.5 meets zero weights instead
    check_fused({activation_member(name, 5)}, check);
    auto fused = check_fused({activation_member(name, 5), activation_member(name, 8), activation_member(name, 6)}, check);
    check_keep(*fused.layer, {torch::randn({4, 3, 5}), torch::randn({4, 3, 8}), torch::randn({4, 3, 6})}, {0, 2});
  }
  CHECK_THROWS_AS(layers::Activation("softmax"), InputError);
  layers::Activation relu("relu"), tanh("tanh");
  CHECK_THROWS_AS(relu.append(tanh), Error);
}

TEST_CASE("layers::gelu's gradient is right for a non-contiguous incoming gradient", "[layers]") {
  // LibTorch 1.13's CPU gelu backward is wrong for a gradient that comes back through a
  // transpose; layers::gelu (the Activation's and the encoder layer's) makes it contiguous.
  const auto device = test_device();
  auto z = torch::randn({8, 5, 8}, device).requires_grad_(true);
  auto g = torch::randn({5, 8, 8}, device).transpose(0, 1);
  layers::gelu(z).backward(g);
  const auto x = z.detach();
  const auto derivative = 0.5 * (1 + torch::erf(x / std::sqrt(2.0))) + x * torch::exp(-0.5 * x * x) / std::sqrt(2 * M_PI);
  check_close(z.grad(), g * derivative, 1e-5, "gelu gradient");
  auto w = z.detach().clone().requires_grad_(true);
  layers::Activation("gelu").forward(w).backward(g);
  CHECK(torch::equal(w.grad(), z.grad()));
}
