// A whole model trained fused (K = 3, unlike widths) and each member alone with LibTorch's own
// modules: the same parameters after a few SGD steps.
#include "layer_check.hpp"
#include "layers/activation.hpp"
#include "layers/layer_norm.hpp"
#include "layers/linear.hpp"
#include "layers/sequential.hpp"
#include "layers/transformer_encoder_layer.hpp"

using namespace packtune;
using namespace packtune::testing;

namespace {

constexpr std::int64_t kFeatures = 6, kClasses = 3, kHeadDim = 4;

struct Width {
  std::int64_t heads, feedforward;
  std::int64_t d_model() const { return heads * kHeadDim; }
};

// The solo model, with LibTorch's modules under the fused Sequential's names.
struct SoloModel : torch::nn::Module {
  explicit SoloModel(Width w) {
    embed = register_module("0", torch::nn::Linear(kFeatures, w.d_model()));
    norm = register_module("1", torch::nn::LayerNorm(torch::nn::LayerNormOptions({w.d_model()})));
    encoder = register_module(
        "3", torch::nn::TransformerEncoderLayer(
                 torch::nn::TransformerEncoderLayerOptions(w.d_model(), w.heads).dim_feedforward(w.feedforward).dropout(0.0)));
    head = register_module("4", torch::nn::Linear(w.d_model(), kClasses));
  }
  // [B, L, F], computed as [L, B, F] throughout (LibTorch's encoder layer is not batch-first):
  // transposing only around the encoder would hand gelu a non-contiguous gradient, which
  // LibTorch 1.13's CPU gelu backward gets wrong (see layers::gelu).
  torch::Tensor forward(const torch::Tensor& x) {
    auto h = torch::gelu(norm(embed(x.transpose(0, 1))));
    return head(encoder(h)).transpose(0, 1);
  }
  torch::nn::Linear embed{nullptr}, head{nullptr};
  torch::nn::LayerNorm norm{nullptr};
  torch::nn::TransformerEncoderLayer encoder{nullptr};
};

std::shared_ptr<layers::Sequential> fused_model(Width w) {
  auto model = std::make_shared<layers::Sequential>();
  model->emplace<layers::Linear>(kFeatures, w.d_model());
  model->emplace<layers::LayerNorm>(w.d_model());
  model->emplace<layers::Activation>("gelu");
  model->emplace<layers::TransformerEncoderLayer>(w.d_model(), w.heads, w.feedforward, 0.0);
  model->emplace<layers::Linear>(w.d_model(), kClasses);
  return model;
}

Member model_member(std::uint64_t seed, Width w) {
  return make_member(
      seed, [&] { return std::make_shared<SoloModel>(w); }, [&] { return fused_model(w); },
      [](std::shared_ptr<SoloModel>& m, const torch::Tensor& x) { return m->forward(x); }, torch::randn({8, 5, kFeatures}));
}

}  // namespace

TEST_CASE("A model of layers equals its LibTorch twin in outputs and gradients, fused with unlike widths", "[layers]") {
  check_fused({model_member(100, {2, 12})});
  check_fused({model_member(100, {2, 12}), model_member(101, {4, 20}), model_member(102, {3, 16})});
}

TEST_CASE("A model of layers trained fused with unlike widths equals each member trained alone", "[layers]") {
  const auto device = test_device();
  const std::vector<Width> widths{{2, 12}, {4, 20}, {3, 16}};
  const double lr = 0.05;
  const int steps = 5;
  std::vector<std::shared_ptr<SoloModel>> solos;
  std::shared_ptr<layers::Sequential> fused;
  for (std::size_t i = 0; i < widths.size(); ++i) {
    torch::manual_seed(100 + i);
    solos.push_back(std::make_shared<SoloModel>(widths[i]));
    torch::manual_seed(100 + i);
    auto member = fused_model(widths[i]);
    check_state(*member, 0, *solos.back());
    if (i == 0) {
      fused = member;
    } else {
      fused->append(*member);
    }
  }
  fused->to(device);
  std::vector<torch::Tensor> stacked;
  for (const auto& entry : fused->stacked_parameters()) stacked.push_back(entry.tensor);
  torch::optim::SGD fused_sgd(stacked, torch::optim::SGDOptions(lr));
  std::vector<std::unique_ptr<torch::optim::SGD>> solo_sgd;
  for (auto& s : solos) {
    s->to(device);
    solo_sgd.push_back(std::make_unique<torch::optim::SGD>(s->parameters(), torch::optim::SGDOptions(lr)));
  }
  torch::manual_seed(1);
  for (int step = 0; step < steps; ++step) {
    auto x = torch::randn({8, 5, kFeatures}, device);
    auto target = torch::randn({8, 5, kClasses}, device);
    // Fused: the sum of the members' mean losses, so each member's gradient is its own.
    fused_sgd.zero_grad();
    auto y = fused->forward(x.unsqueeze(0).expand({3, -1, -1, -1}));
    auto loss = torch::mse_loss(y, target.unsqueeze(0).expand_as(y), at::Reduction::None).mean({1, 2, 3}).sum();
    loss.backward();
    for (const auto& entry : fused->stacked_parameters()) {
      if (entry.padding.defined()) entry.tensor.mutable_grad().masked_fill_(entry.padding, 0);
    }
    fused_sgd.step();
    for (std::size_t i = 0; i < solos.size(); ++i) {
      solo_sgd[i]->zero_grad();
      torch::mse_loss(solos[i]->forward(x), target).backward();
      solo_sgd[i]->step();
    }
  }
  for (std::size_t i = 0; i < solos.size(); ++i) {
    INFO("member " << i);
    check_state(*fused, static_cast<std::int64_t>(i), *solos[i], device.is_cuda() ? 2e-3 : 1e-4);
    // Padding stayed zero.
    for (const auto& entry : fused->stacked_parameters()) {
      if (!entry.padding.defined()) continue;
      INFO("tensor " << entry.name);
      CHECK(entry.tensor.detach().masked_select(entry.padding).abs().max().item<double>() == 0);
    }
  }
}
