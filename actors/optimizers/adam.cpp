// Adam and AdamW, as torch::optim::Adam and AdamW (LibTorch 1.13) step: the same update, with
// weight decay joined to the gradient (Adam) or decoupled (AdamW), which the unit applies as
// spec/optimizers.def says.
#include <cmath>
#include <memory>
#include <vector>

#include "actors/optimizer_step.hpp"

namespace packtune::actors {
namespace {

class AdamStep final : public OptimizerStep {
 public:
  void refresh(const std::vector<spec::OptimizerSpec>& members, const std::vector<bool>&,
               const MakeColumn& column) override {
    std::vector<double> b1, omb1, b2, omb2;
    cpu_.clear();
    for (const auto& h : members) {
      b1.push_back(h.beta1);
      omb1.push_back(1 - h.beta1);
      b2.push_back(h.beta2);
      omb2.push_back(1 - h.beta2);
      Row row;
      row.beta1 = h.beta1;
      row.beta2 = h.beta2;
      // Rounded to float from the same doubles as the columns.
      row.b1 = static_cast<float>(b1.back());
      row.omb1 = static_cast<float>(omb1.back());
      row.b2 = static_cast<float>(b2.back());
      row.omb2 = static_cast<float>(omb2.back());
      cpu_.push_back(row);
    }
    b1_ = column(b1, at::kFloat);
    omb1_ = column(omb1, at::kFloat);
    b2_ = column(b2, at::kFloat);
    omb2_ = column(omb2, at::kFloat);
    b1_64_ = column(b1, at::kDouble);
    b2_64_ = column(b2, at::kDouble);
  }

  void begin(const StepColumns& columns) override {
    // torch computes the bias corrections 1 - beta^step in double on the host; the same double
    // arithmetic runs here on the device, so a step needs no copy to the host.
    step_size_ = (columns.lr64 / (1 - b1_64_.pow(columns.steps64))).to(at::kFloat);
    bias2_ = (1 - b2_64_.pow(columns.steps64)).sqrt().to(at::kFloat);
  }

  Update update(const at::Tensor& grad, const std::vector<at::Tensor>& slots, const StepColumns&) override {
    const auto& exp_avg = slots[0];
    const auto& exp_avg_sq = slots[1];
    exp_avg.mul_(b1_).add_(grad * omb1_);
    exp_avg_sq.mul_(b2_).add_(grad * grad * omb2_);
    return {exp_avg / (exp_avg_sq.sqrt() / bias2_).add_(kTorchEps), step_size_};
  }

  void begin_rows(const std::vector<double>& rates, const double* steps) override {
    for (std::size_t m = 0; m < cpu_.size(); ++m) {
      auto& row = cpu_[m];
      row.step_size = static_cast<float>(rates[m] / (1 - std::pow(row.beta1, steps[m])));
      row.bias2 = static_cast<float>(std::sqrt(1 - std::pow(row.beta2, steps[m])));
    }
  }

  void rows(std::size_t m, const MemberRate& r, float* w, const float* g, float* const* slots,
            std::int64_t n) const override {
    const auto& row = cpu_[m];
    float* __restrict exp_avg = slots[0];
    float* __restrict exp_avg_sq = slots[1];
    const auto eps = static_cast<float>(kTorchEps);
    for (std::int64_t j = 0; j < n; ++j) {
      float grad = g[j];
      if (r.l2 != 0) grad = grad + w[j] * r.l2;
      const float weight = r.decay != 1 ? w[j] * r.decay : w[j];
      exp_avg[j] = exp_avg[j] * row.b1 + grad * row.omb1;
      exp_avg_sq[j] = exp_avg_sq[j] * row.b2 + grad * grad * row.omb2;
      const float denom = std::sqrt(exp_avg_sq[j]) / row.bias2 + eps;
      w[j] = weight - exp_avg[j] / denom * row.step_size;
    }
  }

 private:
  at::Tensor b1_, omb1_, b2_, omb2_;  // [K, 1] float32: beta1, 1 - beta1, beta2, 1 - beta2
  at::Tensor b1_64_, b2_64_;          // [K, 1] float64: the betas, for the bias corrections
  at::Tensor step_size_, bias2_;      // [K, 1] float32 at this step: lr / (1 - beta1^t), sqrt(1 - beta2^t)
  struct Row {
    double beta1 = 0.9, beta2 = 0.999;
    float b1 = 0, omb1 = 0, b2 = 0, omb2 = 0;
    float step_size = 0, bias2 = 1;  // at this step
  };
  std::vector<Row> cpu_;
};

}  // namespace

PACKTUNE_OPTIMIZER_STEP(Adam, AdamStep)
PACKTUNE_OPTIMIZER_STEP(AdamW, AdamStep)

}  // namespace packtune::actors
