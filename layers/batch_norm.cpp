#include "layers/batch_norm.hpp"

#include "packtune/error.hpp"

namespace packtune::layers {

BatchNorm::BatchNorm(const torch::nn::BatchNormOptions& options, int /*spatial_dims*/) : options_(options) {
  if (!options.momentum()) throw InputError("layers::BatchNorm: give a numeric momentum (a cumulative average is not supported)");
  const auto c = options.num_features();
  if (options.affine()) {
    weight_ = add_stacked_parameter("weight", torch::ones({c}));
    bias_ = add_stacked_parameter("bias", torch::zeros({c}));
  }
  if (options.track_running_stats()) {
    running_mean_ = add_stacked_buffer("running_mean", torch::zeros({c}));
    running_var_ = add_stacked_buffer("running_var", torch::ones({c}));
    batches_ = add_stacked_buffer("num_batches_tracked", torch::zeros({}, torch::kInt64));
  }
}

void BatchNorm::check_values(const Layer& other) const {
  const auto& theirs = dynamic_cast<const BatchNorm&>(other).options_;
  // One batch_norm call, with one eps and momentum, serves all members on the grouped path.
  if (theirs.eps() != options_.eps() || *theirs.momentum() != *options_.momentum()) {
    throw Error("cannot fuse batch norms with other eps or momentum: members may differ in channels only");
  }
}

torch::Tensor BatchNorm::forward(const torch::Tensor& x) {
  const auto k = x.size(0);
  const bool training = is_training() || !running_mean_.defined();
  const double momentum = *options_.momentum(), eps = options_.eps();
  if (is_training() && batches_.defined()) {
    torch::NoGradGuard no_grad;
    batches_.add_(1);
  }
  auto row = [](const torch::Tensor& t, std::int64_t i) { return t.defined() ? t[i] : torch::Tensor(); };
  if (k == 1 || !grouped_kernels(x)) {
    // Member by member on the CPU: each member's statistics are summed in its solo order.
    std::vector<torch::Tensor> outs;
    for (std::int64_t i = 0; i < k; ++i) {
      outs.push_back(torch::batch_norm(x[i], row(weight_, i), row(bias_, i), row(running_mean_, i),
                                       row(running_var_, i), training, momentum, eps, true));
    }
    return k == 1 ? outs.front().unsqueeze(0) : torch::stack(outs);
  }
  // One batch norm over K*C channels: [K, B, C, ...] -> [B, K*C, ...]. The running statistics
  // are contiguous [K, C], so their flat views update in place.
  const auto c = x.size(2);
  auto sizes = x.sizes().vec();
  std::vector<std::int64_t> merged{x.size(1), k * c};
  merged.insert(merged.end(), sizes.begin() + 3, sizes.end());
  auto flat = [](const torch::Tensor& t) { return t.defined() ? t.view({-1}) : torch::Tensor(); };
  auto y = torch::batch_norm(x.transpose(0, 1).reshape(merged), flat(weight_), flat(bias_), flat(running_mean_),
                             flat(running_var_), training, momentum, eps, true);
  std::vector<std::int64_t> split{x.size(1), k, c};
  split.insert(split.end(), sizes.begin() + 3, sizes.end());
  return y.view(split).transpose(0, 1);
}

}  // namespace packtune::layers
