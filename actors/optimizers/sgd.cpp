// SGD with momentum and Nesterov momentum, as torch::optim::SGD (LibTorch 1.13) steps.
#include <memory>
#include <vector>

#include "actors/optimizer_step.hpp"

namespace packtune::actors {
namespace {

class SgdStep final : public OptimizerStep {
 public:
  void refresh(const std::vector<spec::OptimizerSpec>& members, const std::vector<bool>& own,
               const MakeColumn& column) override {
    std::vector<double> momentum, nesterov;
    nesterov_rows_ = false;
    cpu_.clear();
    for (std::size_t m = 0; m < members.size(); ++m) {
      momentum.push_back(members[m].momentum);
      nesterov.push_back(members[m].nesterov ? 1.0 : 0.0);
      nesterov_rows_ |= own[m] && members[m].nesterov;
      cpu_.push_back({static_cast<float>(members[m].momentum), members[m].nesterov});
    }
    momentum_ = column(momentum, at::kFloat);
    nesterov_ = column(nesterov, at::kBool);
  }

  Update update(const at::Tensor& grad, const std::vector<at::Tensor>& slots, const StepColumns& columns) override {
    // The momentum buffer. A zero buffer times momentum plus the gradient is the gradient
    // exactly: torch's first-step clone.
    const auto& buffer = slots[0];
    buffer.mul_(momentum_).add_(grad);
    auto direction = nesterov_rows_ ? at::where(nesterov_, grad + buffer * momentum_, buffer) : buffer;
    return {direction, columns.lr};
  }

  void rows(std::size_t m, const MemberRate& r, float* w, const float* g, float* const* slots,
            std::int64_t n) const override {
    const auto [momentum, nesterov] = cpu_[m];
    float* __restrict buffer = slots[0];
    for (std::int64_t j = 0; j < n; ++j) {
      float grad = g[j];
      if (r.l2 != 0) grad = grad + w[j] * r.l2;
      buffer[j] = buffer[j] * momentum + grad;
      const float direction = nesterov ? grad + buffer[j] * momentum : buffer[j];
      w[j] = w[j] - direction * r.rate;
    }
  }

 private:
  at::Tensor momentum_;  // [K, 1] float32
  at::Tensor nesterov_;  // [K, 1] bool
  bool nesterov_rows_ = false;  // a member of this optimizer uses Nesterov momentum
  struct Row {
    float momentum;
    bool nesterov;
  };
  std::vector<Row> cpu_;
};

}  // namespace

PACKTUNE_OPTIMIZER_STEP(Sgd, SgdStep)

}  // namespace packtune::actors
