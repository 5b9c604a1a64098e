// RMSprop with momentum, as torch::optim::RMSprop (LibTorch 1.13, not centered) steps.
#include <cmath>
#include <memory>
#include <vector>

#include "actors/optimizer_step.hpp"

namespace packtune::actors {
namespace {

class RmsPropStep final : public OptimizerStep {
 public:
  void refresh(const std::vector<spec::OptimizerSpec>& members, const std::vector<bool>&,
               const MakeColumn& column) override {
    std::vector<double> alpha, one_minus_alpha, momentum;
    cpu_.clear();
    for (const auto& h : members) {
      alpha.push_back(h.alpha);
      one_minus_alpha.push_back(1 - h.alpha);
      momentum.push_back(h.momentum);
      cpu_.push_back({static_cast<float>(alpha.back()), static_cast<float>(one_minus_alpha.back()),
                      static_cast<float>(momentum.back())});
    }
    alpha_ = column(alpha, at::kFloat);
    one_minus_alpha_ = column(one_minus_alpha, at::kFloat);
    momentum_ = column(momentum, at::kFloat);
  }

  Update update(const at::Tensor& grad, const std::vector<at::Tensor>& slots, const StepColumns& columns) override {
    const auto& square_avg = slots[0];
    const auto& buffer = slots[1];
    square_avg.mul_(alpha_).add_(grad * grad * one_minus_alpha_);
    // Without momentum torch steps by grad / avg; a zero momentum times the buffer plus that
    // quotient is the quotient exactly, so one form serves every member.
    buffer.mul_(momentum_).add_(grad / square_avg.sqrt().add_(kTorchEps));
    return {buffer, columns.lr};
  }

  void rows(std::size_t m, const MemberRate& r, float* w, const float* g, float* const* slots,
            std::int64_t n) const override {
    const auto& row = cpu_[m];
    float* __restrict square_avg = slots[0];
    float* __restrict buffer = slots[1];
    const auto eps = static_cast<float>(kTorchEps);
    for (std::int64_t j = 0; j < n; ++j) {
      float grad = g[j];
      if (r.l2 != 0) grad = grad + w[j] * r.l2;
      square_avg[j] = square_avg[j] * row.alpha + grad * grad * row.one_minus_alpha;
      buffer[j] = buffer[j] * row.momentum + grad / (std::sqrt(square_avg[j]) + eps);
      w[j] = w[j] - buffer[j] * r.rate;
    }
  }

 private:
  at::Tensor alpha_, one_minus_alpha_, momentum_;  // [K, 1] float32
  struct Row {
    float alpha, one_minus_alpha, momentum;
  };
  std::vector<Row> cpu_;
};

}  // namespace

PACKTUNE_OPTIMIZER_STEP(RmsProp, RmsPropStep)

}  // namespace packtune::actors
