#include "layers/layer_norm.hpp"

#include "packtune/error.hpp"

namespace packtune::layers {

LayerNorm::LayerNorm(std::int64_t normalized_size, double eps, bool elementwise_affine)
    : LayerNorm(torch::nn::LayerNorm(
          torch::nn::LayerNormOptions({normalized_size}).eps(eps).elementwise_affine(elementwise_affine))) {}

LayerNorm::LayerNorm(const torch::nn::LayerNorm& solo) : eps_(solo->options.eps()) {
  const auto& shape = solo->options.normalized_shape();
  if (shape.size() != 1) {
    throw InputError("layers::LayerNorm: normalises over the last dimension only; normalized_shape has " +
                     std::to_string(shape.size()) + " sizes");
  }
  widths_.push_back(shape[0]);
  if (solo->options.elementwise_affine()) {
    weight_ = add_stacked_parameter("weight", solo->weight);
    bias_ = add_stacked_parameter("bias", solo->bias);
  }
}

void LayerNorm::check_values(const Layer& other) const {
  const auto& theirs = dynamic_cast<const LayerNorm&>(other);
  if (theirs.eps_ != eps_) {
    throw Error("cannot fuse layer norms with eps " + std::to_string(eps_) + " and " + std::to_string(theirs.eps_));
  }
}

void LayerNorm::append_values(Layer& other) {
  const auto& theirs = dynamic_cast<LayerNorm&>(other);
  widths_.insert(widths_.end(), theirs.widths_.begin(), theirs.widths_.end());
}

void LayerNorm::keep_values(const std::vector<std::int64_t>& which) {
  std::vector<std::int64_t> widths;
  for (auto k : which) widths.push_back(widths_[static_cast<std::size_t>(k)]);
  widths_ = std::move(widths);
}

torch::Tensor LayerNorm::forward(const torch::Tensor& x) {
  const auto k = x.size(0), d = x.size(-1);
  if (k > 1 && grouped_kernels(x)) return batched(x);
  std::vector<torch::Tensor> outs;
  for (std::int64_t i = 0; i < k; ++i) {
    const auto w = widths_[static_cast<std::size_t>(i)];
    auto own = x[i].narrow(-1, 0, w);
    auto weight = weight_.defined() ? weight_[i].narrow(0, 0, w) : torch::Tensor();
    auto bias = bias_.defined() ? bias_[i].narrow(0, 0, w) : torch::Tensor();
    auto y = torch::layer_norm(own, {w}, weight, bias, eps_);
    if (w < d) {
      std::vector<std::int64_t> pad(2 * static_cast<std::size_t>(y.dim()), 0);
      pad[1] = d - w;  // the last dimension's end
      y = torch::constant_pad_nd(y, pad, 0);
    }
    outs.push_back(y);
  }
  return k == 1 ? outs.front().unsqueeze(0) : torch::stack(outs);
}

torch::Tensor LayerNorm::batched(const torch::Tensor& x) {
  const auto k = x.size(0), d = x.size(-1);
  std::vector<std::int64_t> column(static_cast<std::size_t>(x.dim()), 1);
  column.front() = k;
  column.back() = d;
  bool padded = false;
  for (auto w : widths_) padded |= w != d;
  torch::Tensor y;
  if (!padded) {
    y = torch::layer_norm(x, {d}, {}, {}, eps_);
  } else {
    if (!mask_ || mask_->device() != x.device() || mask_->scalar_type() != x.scalar_type()) {
      auto mask = torch::zeros({k, d});
      for (std::int64_t i = 0; i < k; ++i) mask[i].narrow(0, 0, widths_[static_cast<std::size_t>(i)]).fill_(1);
      mask_ = mask.to(x.device(), x.scalar_type());
    }
    const auto mask = mask_->view(column);
    std::vector<std::int64_t> one(column);
    one.back() = 1;
    // Each member's width as the divisor, [K, 1, ..., 1].
    const auto count = mask_->sum(-1).view(one);
    auto centred = (x - (x * mask).sum(-1, true) / count) * mask;
    auto var = (centred * centred).sum(-1, true) / count;
    y = centred * torch::rsqrt(var + eps_);
  }
  if (weight_.defined()) y = torch::addcmul(bias_.view(column), y, weight_.view(column));
  return y;
}

}  // namespace packtune::layers
