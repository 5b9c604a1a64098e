#include "actors/fused_optimizer.hpp"

#include <cmath>

#include "packtune/error.hpp"

namespace packtune::actors {

FusedOptimizer::FusedOptimizer(std::string kind, torch::Device device)
    : kind_(std::move(kind)), device_(device) {
  if (kind_ != "sgd" && kind_ != "adam" && kind_ != "adamw") {
    throw InputError("optimizer: unknown optimizer \"" + kind_ + "\"; expected sgd, adam or adamw");
  }
  slots_.resize(kind_ == "sgd" ? 1 : 2);
}

torch::Tensor FusedOptimizer::column(const std::vector<double>& values) const {
  // Host doubles rounded to float32 once, exactly as LibTorch rounds a scalar argument.
  std::vector<float> f(values.begin(), values.end());
  return torch::tensor(f, torch::TensorOptions().dtype(torch::kFloat32))
      .view({static_cast<std::int64_t>(f.size()), 1})
      .to(device_);
}

void FusedOptimizer::append_member(const OptimizerSpec& spec,
                                   const std::vector<torch::Tensor>& member_shapes,
                                   const std::vector<std::vector<torch::Tensor>>& state, std::int64_t steps) {
  if (spec.name != kind_) {
    throw Error("a " + spec.name + " trial cannot join a fused " + kind_ + " pack");
  }
  if (!state.empty() && state.size() != slots_.size()) {
    throw Error("a " + kind_ + " member needs " + std::to_string(slots_.size()) + " optimizer state slots");
  }
  hyper_.push_back(spec);
  steps_.push_back(steps);
  for (std::size_t s = 0; s < slots_.size(); ++s) {
    auto& slot = slots_[s];
    if (slot.empty()) slot.resize(member_shapes.size());
    for (std::size_t i = 0; i < member_shapes.size(); ++i) {
      auto value = (state.empty() ? torch::zeros_like(member_shapes[i])
                                  : state[s][i].to(member_shapes[i].options()).reshape(member_shapes[i].sizes()))
                       .unsqueeze(0);
      slot[i] = slot[i].defined() ? torch::cat({slot[i], value}) : value.clone();
    }
  }
}

void FusedOptimizer::keep_members(const std::vector<std::int64_t>& keep) {
  std::vector<OptimizerSpec> hyper;
  std::vector<std::int64_t> steps;
  for (auto k : keep) {
    hyper.push_back(hyper_[static_cast<std::size_t>(k)]);
    steps.push_back(steps_[static_cast<std::size_t>(k)]);
  }
  hyper_ = std::move(hyper);
  steps_ = std::move(steps);
  if (keep.empty()) {
    for (auto& slot : slots_) slot.clear();
    return;
  }
  auto index = torch::tensor(keep, torch::kInt64).to(device_);
  for (auto& slot : slots_) {
    for (auto& t : slot) t = t.index_select(0, index);
  }
}

void FusedOptimizer::step(const std::vector<torch::Tensor>& params) {
  torch::NoGradGuard no_grad;
  const auto k = static_cast<std::int64_t>(hyper_.size());
  if (k == 0) return;
  for (auto& s : steps_) ++s;
  std::vector<double> lr, wd;
  for (const auto& h : hyper_) {
    lr.push_back(h.lr);
    wd.push_back(h.weight_decay);
  }
  const auto lr_t = column(lr);
  const auto wd_t = column(wd);

  if (kind_ == "sgd") {
    std::vector<double> momentum, nesterov;
    for (const auto& h : hyper_) {
      momentum.push_back(h.momentum);
      nesterov.push_back(h.nesterov ? 1.0 : 0.0);
    }
    const auto m_t = column(momentum);
    const auto nesterov_t = column(nesterov).to(torch::kBool);
    for (std::size_t i = 0; i < params.size(); ++i) {
      auto p = params[i].view({k, -1});
      auto d_p = params[i].grad().view({k, -1}).add(p * wd_t);
      // A zero buffer times momentum plus d_p is d_p exactly: torch's first-step clone.
      auto buf = slots_[0][i].view({k, -1});
      buf.mul_(m_t).add_(d_p);
      auto update = torch::where(nesterov_t, d_p + buf * m_t, buf);
      p.sub_(update * lr_t);
    }
    return;
  }

  std::vector<double> beta1, beta2, step_size, bias2_sqrt;
  for (std::size_t m = 0; m < hyper_.size(); ++m) {
    const auto& h = hyper_[m];
    beta1.push_back(h.beta1);
    beta2.push_back(h.beta2);
    const double bc1 = 1 - std::pow(h.beta1, static_cast<double>(steps_[m]));
    const double bc2 = 1 - std::pow(h.beta2, static_cast<double>(steps_[m]));
    step_size.push_back(h.lr / bc1);
    bias2_sqrt.push_back(std::sqrt(bc2));
  }
  const auto b1 = column(beta1);
  const auto b2 = column(beta2);
  std::vector<double> one_minus_b1, one_minus_b2, decay;
  for (std::size_t m = 0; m < hyper_.size(); ++m) {
    one_minus_b1.push_back(1 - beta1[m]);
    one_minus_b2.push_back(1 - beta2[m]);
    decay.push_back(1 - lr[m] * wd[m]);
  }
  const auto omb1 = column(one_minus_b1);
  const auto omb2 = column(one_minus_b2);
  const auto step_t = column(step_size);
  const auto bias2_t = column(bias2_sqrt);
  const auto decay_t = column(decay);
  constexpr double eps = 1e-8;  // torch::optim::AdamOptions' default
  for (std::size_t i = 0; i < params.size(); ++i) {
    auto p = params[i].view({k, -1});
    auto grad = params[i].grad().view({k, -1});
    if (kind_ == "adamw") {
      p.mul_(decay_t);
    } else {
      grad = grad.add(p * wd_t);
    }
    auto exp_avg = slots_[0][i].view({k, -1});
    auto exp_avg_sq = slots_[1][i].view({k, -1});
    exp_avg.mul_(b1).add_(grad * omb1);
    exp_avg_sq.mul_(b2).add_(grad * grad * omb2);
    auto denom = (exp_avg_sq.sqrt() / bias2_t).add_(eps);
    p.sub_(exp_avg / denom * step_t);
  }
}

std::vector<std::vector<torch::Tensor>> FusedOptimizer::member_state(std::int64_t k) const {
  std::vector<std::vector<torch::Tensor>> out;
  for (const auto& slot : slots_) {
    std::vector<torch::Tensor> tensors;
    for (const auto& t : slot) tensors.push_back(t.select(0, k));
    out.push_back(std::move(tensors));
  }
  return out;
}

}  // namespace packtune::actors
