#pragma once
// An embedding table of K members: int64 indices [K, B, ...] give vectors [K, B, ..., dim].
// Tables are stacked [K, num_embeddings, dim]; members may differ in both sizes (a narrower
// member's padded features are zero rows' and columns' zeros). One gather serves all members.
#include "layers/layer.hpp"

namespace packtune::layers {

class Embedding : public Layer {
 public:
  // Initialised exactly as torch::nn::Embedding(num_embeddings, dim) (normal(0, 1)).
  Embedding(std::int64_t num_embeddings, std::int64_t dim);
  // One member holding a copy of `solo`'s table. Throws InputError for the options this layer
  // does not have: padding_idx, max_norm, scale_grad_by_freq, sparse.
  explicit Embedding(const torch::nn::Embedding& solo);

  // `x`: indices, each below its member's own num_embeddings. One past it is not checked (that
  // would cost a reduction and a device sync per forward) and does not fail as it would alone:
  // below the widest member's num_embeddings it reads zero padding rows, at or past it the next
  // member's rows (and fails only past the last member's table).
  torch::Tensor forward(const torch::Tensor& x) override;

 private:
  torch::Tensor weight_;
};

}  // namespace packtune::layers
