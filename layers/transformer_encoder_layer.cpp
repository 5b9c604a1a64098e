#include "layers/transformer_encoder_layer.hpp"

#include <torch/version.h>

#include "layers/activation.hpp"
#include "packtune/error.hpp"

namespace packtune::layers {
namespace {

torch::nn::TransformerEncoderLayerOptions options_of(std::int64_t d_model, std::int64_t nhead,
                                                     std::int64_t dim_feedforward, double dropout,
                                                     const std::string& activation) {
  torch::nn::TransformerEncoderLayerOptions options(d_model, nhead);
  options.dim_feedforward(dim_feedforward).dropout(dropout);
  if (activation == "relu") {
    options.activation(torch::kReLU);
  } else if (activation == "gelu") {
    options.activation(torch::kGELU);
  } else {
    throw InputError("layers::TransformerEncoderLayer: activation \"" + activation + "\"; expected relu or gelu");
  }
  return options;
}

}  // namespace

TransformerEncoderLayer::TransformerEncoderLayer(std::int64_t d_model, std::int64_t nhead,
                                                 std::int64_t dim_feedforward, double dropout,
                                                 const std::string& activation)
    : TransformerEncoderLayer(
          torch::nn::TransformerEncoderLayer(options_of(d_model, nhead, dim_feedforward, dropout, activation))) {}

TransformerEncoderLayer::TransformerEncoderLayer(const torch::nn::TransformerEncoderLayer& solo) {
  const auto& activation = solo->options.activation();
  // The options' variant is c10's in LibTorch 1.13 and std's in 2.x.
#if TORCH_VERSION_MAJOR >= 2
  using std::get_if;
#else
  using c10::get_if;
#endif
  if (get_if<torch::enumtype::kReLU>(&activation)) {
    activation_ = "relu";
  } else if (get_if<torch::enumtype::kGELU>(&activation)) {
    activation_ = "gelu";
  } else {
    throw InputError("layers::TransformerEncoderLayer: the activation must be kReLU or kGELU");
  }
  // LibTorch's registration order and names.
  self_attn_ = register_module("self_attn", std::make_shared<MultiheadAttention>(solo->self_attn));
  linear1_ = register_module("linear1", std::make_shared<Linear>(solo->linear1));
  dropout_ = register_module("dropout", std::make_shared<Dropout>(solo->dropout->options.p()));
  linear2_ = register_module("linear2", std::make_shared<Linear>(solo->linear2));
  norm1_ = register_module("norm1", std::make_shared<LayerNorm>(solo->norm1));
  norm2_ = register_module("norm2", std::make_shared<LayerNorm>(solo->norm2));
  dropout1_ = register_module("dropout1", std::make_shared<Dropout>(solo->dropout1->options.p()));
  dropout2_ = register_module("dropout2", std::make_shared<Dropout>(solo->dropout2->options.p()));
}

void TransformerEncoderLayer::check_values(const Layer& other) const {
  const auto& theirs = dynamic_cast<const TransformerEncoderLayer&>(other).activation_;
  if (theirs != activation_) {
    throw Error("cannot fuse encoder layers with activations " + activation_ + " and " + theirs);
  }
}

torch::Tensor TransformerEncoderLayer::forward(const torch::Tensor& x) {
  auto y = norm1_->forward(x + dropout1_->forward(self_attn_->forward(x)));
  auto hidden = linear1_->forward(y);
  hidden = activation_ == "gelu" ? layers::gelu(hidden) : torch::relu(hidden);
  return norm2_->forward(y + dropout2_->forward(linear2_->forward(dropout_->forward(hidden))));
}

}  // namespace packtune::layers
