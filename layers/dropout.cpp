#include "layers/dropout.hpp"

#include "layers/member_seeds.hpp"
#include "packtune/error.hpp"

namespace packtune::layers {

Dropout::Dropout(double p) : p_{p} {
  if (!(p >= 0 && p < 1)) throw InputError("layers::Dropout: the rate must be in [0, 1), got " + std::to_string(p));
}

void Dropout::append_values(Layer& other) {
  const auto& theirs = dynamic_cast<Dropout&>(other).p_;
  p_.insert(p_.end(), theirs.begin(), theirs.end());
}

void Dropout::keep_values(const std::vector<std::int64_t>& which) {
  std::vector<double> p;
  for (auto k : which) p.push_back(p_[static_cast<std::size_t>(k)]);
  p_ = std::move(p);
}

torch::Tensor Dropout::forward(const torch::Tensor& x) {
  if (!is_training()) return x;
  // Every training forward takes its draw from an open scope, whatever the rates: a member
  // whose rate here is 0 alone (no mask needed) but shares the layer with members that drop
  // must still advance the call index, or its later dropouts would draw other masks fused
  // than alone.
  auto* scope = MemberSeeds::current();
  torch::Tensor seeds;
  if (scope) seeds = scope->next_draw();
  bool any = false;
  for (double p : p_) any |= p > 0;
  if (!any) return x;
  const auto k = x.size(0);
  if (!keep_ || keep_->device() != x.device()) {
    std::vector<double> keep;
    for (double p : p_) keep.push_back(1 - p);
    // Rounded to float32 once, as the threshold and the scale of the float32 activations.
    keep_ = torch::tensor(keep, torch::kFloat64).to(torch::kFloat32).to(x.device()).view({k, 1});
    // A draw h in [0, 2^32) keeps the element when h < keep * 2^32.
    threshold_ = (keep_->to(torch::kFloat64) * 4294967296.0).to(torch::kInt64);
  }
  if (!scope) {
    seeds = torch::randint(0, std::int64_t{1} << 32, {k, 1}, torch::TensorOptions().dtype(torch::kInt64)).to(x.device());
  }
  std::vector<std::int64_t> column(x.dim(), 1);
  column[0] = k;
  const auto keep = keep_->view(column);
  auto kept = coordinate_hash(seeds, x.sizes()).lt(threshold_->view(column));
  return x * kept.to(x.scalar_type()) / keep;
}

}  // namespace packtune::layers
