#include "layer_check.hpp"
#include "layers/embedding.hpp"

using namespace packtune;
using namespace packtune::testing;

namespace {

Member embedding_member(std::uint64_t seed, std::int64_t rows, std::int64_t dim) {
  return make_member(
      seed, [&] { return torch::nn::Embedding(rows, dim); },
      [&] { return std::make_shared<layers::Embedding>(rows, dim); },
      [](torch::nn::Embedding& m, const torch::Tensor& x) { return m(x); }, torch::randint(0, rows, {4, 5}));
}

}  // namespace

TEST_CASE("layers::Embedding equals torch::nn::Embedding alone and fused with unlike sizes", "[layers]") {
  check_fused({embedding_member(1, 10, 4)});
  auto fused = check_fused({embedding_member(1, 10, 4), embedding_member(2, 12, 7), embedding_member(3, 8, 5)});
  // Indices below every kept member's rows (the inputs do not widen).
  check_keep(*fused.layer, {torch::randint(0, 8, {4, 5}), torch::randint(0, 8, {4, 5}), torch::randint(0, 8, {4, 5})},
             {0, 2});
  CHECK(fused.layer->stacked_parameters().front().tensor.sizes() == at::IntArrayRef({2, 10, 5}));
  CHECK_THROWS_AS(layers::Embedding(torch::nn::Embedding(torch::nn::EmbeddingOptions(4, 2).padding_idx(0))),
                  InputError);
}
