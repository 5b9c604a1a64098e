#pragma once
// Dropout that draws its mask as one bernoulli_ call on a tensor of the activation's shape,
// from the global generator: the reference models' dropout. Its masks are not those of
// layers::Dropout, so reference comparisons run without dropout.
#include <torch/torch.h>

namespace packtune::reference {

class MemberDropoutImpl : public torch::nn::Module {
 public:
  explicit MemberDropoutImpl(double p) : p_(p) {}
  torch::Tensor forward(const torch::Tensor& x) {
    if (!is_training() || p_ <= 0) return x;
    return x * torch::empty_like(x).bernoulli_(1 - p_).div_(1 - p_);
  }
  double p() const { return p_; }

 private:
  double p_;
};
TORCH_MODULE(MemberDropout);

}  // namespace packtune::reference
