#include "layers/embedding.hpp"

#include "packtune/error.hpp"

namespace packtune::layers {

Embedding::Embedding(std::int64_t num_embeddings, std::int64_t dim)
    : Embedding(torch::nn::Embedding(num_embeddings, dim)) {}

Embedding::Embedding(const torch::nn::Embedding& solo) {
  const auto& options = solo->options;
  if (options.padding_idx() || options.max_norm() || options.scale_grad_by_freq() || options.sparse()) {
    throw InputError("layers::Embedding: padding_idx, max_norm, scale_grad_by_freq and sparse are not supported");
  }
  weight_ = add_stacked_parameter("weight", solo->weight);
}

torch::Tensor Embedding::forward(const torch::Tensor& x) {
  // Member k's rows start at k * rows in the flattened [K * rows, dim] table.
  const auto k = weight_.size(0), rows = weight_.size(1);
  std::vector<std::int64_t> column(static_cast<std::size_t>(x.dim()), 1);
  column.front() = k;
  auto offsets = torch::arange(k, x.options().dtype(torch::kInt64)).mul(rows).view(column);
  return torch::embedding(weight_.reshape({k * rows, weight_.size(2)}), x + offsets);
}

}  // namespace packtune::layers
