#include "actors/fused_optimizer.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include <ATen/Parallel.h>

#include "layers/layer.hpp"
#include "packtune/error.hpp"

namespace packtune::actors {

FusedOptimizer::FusedOptimizer(torch::Device device, CpuStep cpu_step) : device_(device), cpu_step_(cpu_step) {}

torch::Tensor FusedOptimizer::column(const std::vector<double>& values, torch::Dtype dtype) const {
  // Host doubles rounded to float32 once, exactly as LibTorch rounds a scalar argument.
  return torch::tensor(values, torch::TensorOptions().dtype(torch::kFloat64))
      .to(dtype)
      .view({static_cast<std::int64_t>(values.size()), 1})
      .to(device_);
}

void FusedOptimizer::append_member(const OptimizerSpec& spec,
                                   const std::vector<torch::Tensor>& member_shapes,
                                   const std::vector<std::vector<torch::Tensor>>& state, std::int64_t steps,
                                   const ScheduleSteps& schedule) {
  if (spec.name != "sgd" && spec.name != "adam" && spec.name != "adamw") {
    throw InputError("optimizer: unknown optimizer \"" + spec.name + "\"; expected sgd, adam or adamw");
  }
  const bool adaptive = spec.name != "sgd";
  const std::size_t slots = adaptive ? 2 : 1;
  if (!state.empty() && state.size() != slots) {
    throw Error("a " + spec.name + " member needs " + std::to_string(slots) + " optimizer state slots");
  }
  const auto k = static_cast<std::int64_t>(hyper_.size());
  // The first Adam member of a group brings slot 1, zero for the members already there.
  if (adaptive && slots_[1].empty() && k > 0) {
    for (const auto& t : slots_[0]) slots_[1].push_back(torch::zeros_like(t));
  }
  for (std::size_t s = 0; s < 2; ++s) {
    auto& slot = slots_[s];
    if (s == 1 && slot.empty() && !adaptive) continue;
    if (slot.empty()) slot.resize(member_shapes.size());
    for (std::size_t i = 0; i < member_shapes.size(); ++i) {
      auto value = (s >= slots || state.empty()
                        ? torch::zeros_like(member_shapes[i])
                        : state[s][i].to(member_shapes[i].options()).reshape(member_shapes[i].sizes()))
                       .unsqueeze(0);
      slot[i] = slot[i].defined() ? torch::cat({slot[i], value}) : value.clone();
    }
  }
  hyper_.push_back(spec);
  steps_.push_back(steps);
  schedules_.push_back(schedule);
  refresh();
}

void FusedOptimizer::keep_members(const std::vector<std::int64_t>& keep) {
  std::vector<OptimizerSpec> hyper;
  std::vector<std::int64_t> steps;
  std::vector<ScheduleSteps> schedules;
  for (auto k : keep) {
    hyper.push_back(hyper_[static_cast<std::size_t>(k)]);
    steps.push_back(steps_[static_cast<std::size_t>(k)]);
    schedules.push_back(schedules_[static_cast<std::size_t>(k)]);
  }
  hyper_ = std::move(hyper);
  steps_ = std::move(steps);
  schedules_ = std::move(schedules);
  if (keep.empty()) {
    for (auto& slot : slots_) slot.clear();
    refresh();
    return;
  }
  auto index = torch::tensor(keep, torch::kInt64).to(device_);
  for (auto& slot : slots_) {
    for (auto& t : slot) t = t.index_select(0, index);
  }
  refresh();
  if (!has_adaptive_) slots_[1].clear();  // the last Adam member left
}

void FusedOptimizer::copy_member(std::int64_t from, std::int64_t to, const OptimizerSpec& spec) {
  const auto f = static_cast<std::size_t>(from), t = static_cast<std::size_t>(to);
  if (hyper_[f].name != spec.name) {
    throw Error("optimizer " + spec.name + " cannot take the state of a " + hyper_[f].name + " member");
  }
  torch::NoGradGuard no_grad;
  for (auto& slot : slots_) {
    for (auto& state : slot) state[to].copy_(state[from]);
  }
  steps_[t] = steps_[f];
  hyper_[t] = spec;
  refresh();
}

void FusedOptimizer::resize(const std::vector<std::vector<std::int64_t>>& shapes) {
  for (auto& slot : slots_) {
    for (std::size_t i = 0; i < slot.size(); ++i) slot[i] = layers::fit_to(slot[i], shapes[i]);
  }
}

void FusedOptimizer::refresh() {
  has_sgd_ = has_adaptive_ = has_l2_ = has_decoupled_ = has_nesterov_ = false;
  scheduled_ = clipped_ = false;
  cpu_members_.clear();
  if (hyper_.empty()) return;
  std::vector<double> lr, l2, decay, c0, c1, b2, omb2, nesterov, adaptive, b1_64, b2_64, steps, clip;
  for (std::size_t m = 0; m < hyper_.size(); ++m) {
    const auto& h = hyper_[m];
    scheduled_ |= !h.schedule.constant();
    clipped_ |= h.grad_clip_norm > 0;
    clip.push_back(h.grad_clip_norm > 0 ? h.grad_clip_norm : std::numeric_limits<double>::infinity());
    const bool adam = h.name != "sgd";
    const bool adamw = h.name == "adamw";
    has_sgd_ |= !adam;
    has_adaptive_ |= adam;
    has_nesterov_ |= !adam && h.nesterov;
    has_l2_ |= !adamw && h.weight_decay != 0;
    has_decoupled_ |= adamw && h.weight_decay != 0;
    lr.push_back(h.lr);
    l2.push_back(adamw ? 0.0 : h.weight_decay);
    decay.push_back(adamw ? 1 - h.lr * h.weight_decay : 1.0);
    c0.push_back(adam ? h.beta1 : h.momentum);
    c1.push_back(adam ? 1 - h.beta1 : 1.0);
    b2.push_back(adam ? h.beta2 : 1.0);
    omb2.push_back(adam ? 1 - h.beta2 : 0.0);
    nesterov.push_back(!adam && h.nesterov ? 1.0 : 0.0);
    adaptive.push_back(adam ? 1.0 : 0.0);
    // Rounded to float from the same doubles as the columns, as LibTorch rounds a Scalar.
    MemberStep s;
    s.adam = adam;
    s.nesterov = nesterov.back() != 0;
    s.rate = static_cast<float>(lr.back());
    s.l2 = static_cast<float>(l2.back());
    s.decay = static_cast<float>(decay.back());
    s.c0 = static_cast<float>(c0.back());
    s.c1 = static_cast<float>(c1.back());
    s.b2 = static_cast<float>(b2.back());
    s.omb2 = static_cast<float>(omb2.back());
    cpu_members_.push_back(s);
    b1_64.push_back(adam ? h.beta1 : 0.0);
    b2_64.push_back(adam ? h.beta2 : 0.0);
    steps.push_back(static_cast<double>(steps_[m]));
  }
  lr_ = column(lr);
  l2_ = column(l2);
  decay_ = column(decay);
  c0_ = column(c0);
  c1_ = column(c1);
  b2_ = column(b2);
  omb2_ = column(omb2);
  nesterov_ = column(nesterov, torch::kBool);
  adaptive_ = column(adaptive, torch::kBool);
  lr64_ = column(lr, torch::kFloat64);
  b1_64_ = column(b1_64, torch::kFloat64);
  b2_64_ = column(b2_64, torch::kFloat64);
  steps64_ = column(steps, torch::kFloat64);
  clip_norm_ = column(clip);
  // The columns hold the base rates; the step's own come with its schedule_step().
}

double FusedOptimizer::scheduled_lr(std::int64_t k) const {
  const auto m = static_cast<std::size_t>(k);
  const auto& h = hyper_[m];
  return h.schedule.constant() ? h.lr : h.lr * lr_factor(h.schedule, schedules_[m], steps_[m]);
}

void FusedOptimizer::schedule_step() {
  if (!scheduled_) return;
  std::vector<double> lr, decay;
  for (std::size_t m = 0; m < hyper_.size(); ++m) {
    const auto& h = hyper_[m];
    lr.push_back(scheduled_lr(static_cast<std::int64_t>(m)));
    // AdamW decays by the step's rate, as torch's scheduler sets the group's lr.
    decay.push_back(h.name == "adamw" ? 1 - lr.back() * h.weight_decay : 1.0);
    cpu_members_[m].decay = static_cast<float>(decay.back());
    if (!cpu_members_[m].adam) cpu_members_[m].rate = static_cast<float>(lr.back());
  }
  rates_ = lr;
  torch::NoGradGuard no_grad;
  // In place: a captured step reads these tensors where they are.
  lr_.copy_(column(lr));
  lr64_.copy_(column(lr, torch::kFloat64));
  decay_.copy_(column(decay));
}

void FusedOptimizer::count_step() {
  for (auto& s : steps_) ++s;
}

void FusedOptimizer::clip(const std::vector<torch::Tensor>& params) {
  const auto k = static_cast<std::int64_t>(hyper_.size());
  const bool plain = device_.is_cpu() && std::all_of(params.begin(), params.end(), [](const torch::Tensor& p) {
    return p.grad().defined() && p.grad().scalar_type() == torch::kFloat32 && p.grad().is_contiguous();
  });
  if (plain) {
    // On a CPU one member's sum runs over its rows in one order, in double, whatever the
    // group's size and the threads: a member clips bit for bit alike fused or alone. (ATen's
    // reduction splits a lone row over threads, and a row of many otherwise.)
    std::vector<double> sums(static_cast<std::size_t>(k), 0.0);
    for (const auto& p : params) {
      const auto row = p.numel() / k;
      const float* g = p.grad().data_ptr<float>();
      for (std::int64_t m = 0; m < k; ++m) {
        double sum = 0;
        for (std::int64_t i = m * row; i < (m + 1) * row; ++i) sum += static_cast<double>(g[i]) * g[i];
        sums[static_cast<std::size_t>(m)] += sum;
      }
    }
    for (std::int64_t m = 0; m < k; ++m) {
      const double max_norm = hyper_[static_cast<std::size_t>(m)].grad_clip_norm;
      const double factor = max_norm / (std::sqrt(sums[static_cast<std::size_t>(m)]) + 1e-6);
      if (!(max_norm > 0) || !(factor < 1)) continue;
      const auto f = static_cast<float>(factor);
      for (const auto& p : params) {
        const auto row = p.numel() / k;
        float* g = p.grad().data_ptr<float>() + m * row;
        for (std::int64_t i = 0; i < row; ++i) g[i] *= f;
      }
    }
    return;
  }
  // clip_grad_norm_ over one member's parameters: the norm of each parameter's gradient, the
  // norm of those norms, and a factor max_norm / (norm + 1e-6) applied when below 1.
  std::vector<torch::Tensor> norms;
  for (const auto& p : params) norms.push_back(p.grad().view({k, -1}).norm(2, 1));
  const auto total = torch::stack(norms, 1).norm(2, 1, /*keepdim=*/true);  // [K, 1]
  const auto factor = (clip_norm_ / (total + 1e-6)).clamp_max(1.0);
  for (const auto& p : params) {
    auto grad = p.grad().view({k, -1});
    grad.mul_(factor);
  }
}

bool FusedOptimizer::cpu_step(const std::vector<torch::Tensor>& params) {
  const auto k = static_cast<std::int64_t>(hyper_.size());
  // The pass reads raw rows: every tensor must hold K rows of the parameter's length.
  for (std::size_t i = 0; i < params.size(); ++i) {
    const auto usable = [&](const torch::Tensor& t) {
      return t.defined() && t.scalar_type() == torch::kFloat32 && t.is_contiguous() && t.numel() == params[i].numel();
    };
    if (params[i].dim() == 0 || params[i].size(0) != k) return false;
    if (!usable(params[i]) || !usable(params[i].grad()) || !usable(slots_[0][i])) return false;
    if (has_adaptive_ && !usable(slots_[1][i])) return false;
  }
  // Adam's bias corrections in double, as torch::optim::Adam computes them. The step count
  // is the device-side one the tensor form keeps (step() and FusedGroup call count_step()
  // and device_step() in either order); only Adam rows read it.
  steps64_.add_(1);
  const auto counts = steps64_.accessor<double, 2>();
  // In place: only Adam rows' rate and bias2 change from step to step, and both are set here.
  auto& members = cpu_members_;
  for (std::size_t m = 0; m < members.size(); ++m) {
    if (!members[m].adam) continue;
    const auto& h = hyper_[m];
    const auto step = counts[static_cast<std::int64_t>(m)][0];
    const double lr = scheduled_ ? rates_[m] : h.lr;
    members[m].rate = static_cast<float>(lr / (1 - std::pow(h.beta1, step)));
    members[m].bias2 = static_cast<float>(std::sqrt(1 - std::pow(h.beta2, step)));
  }
  // Elementwise, so any split over threads gives the same numbers.
  constexpr std::int64_t kGrain = 1 << 15;
  for (std::size_t i = 0; i < params.size(); ++i) {
    const auto row = params[i].numel() / k;
    float* w = params[i].data_ptr<float>();
    const float* g = params[i].grad().data_ptr<float>();
    float* s0 = slots_[0][i].data_ptr<float>();
    float* s1 = has_adaptive_ ? slots_[1][i].data_ptr<float>() : nullptr;
    at::parallel_for(0, k * row, kGrain, [&](std::int64_t begin, std::int64_t end) {
      while (begin < end) {
        const auto m = begin / row;
        const auto stop = std::min(end, (m + 1) * row);
        member_step(members[static_cast<std::size_t>(m)], w + begin, g + begin, s0 + begin,
                    s1 ? s1 + begin : nullptr, stop - begin);
        begin = stop;
      }
    });
  }
  return true;
}

void FusedOptimizer::device_step(const std::vector<torch::Tensor>& params) {
  torch::NoGradGuard no_grad;
  const auto k = static_cast<std::int64_t>(hyper_.size());
  if (k == 0) return;
  if (clipped_) clip(params);
  if (device_.is_cpu() && cpu_step_ == CpuStep::OnePass && cpu_step(params)) return;
  torch::Tensor step_size, bias2;
  if (has_adaptive_) {
    // torch computes 1 - beta^step in double on the host; the same double arithmetic here
    // runs on the device, so the step needs no host copy.
    steps64_.add_(1);
    step_size = (lr64_ / (1 - b1_64_.pow(steps64_))).to(torch::kFloat32);
    bias2 = (1 - b2_64_.pow(steps64_)).sqrt().to(torch::kFloat32);
  }
  constexpr double eps = 1e-8;  // torch::optim::AdamOptions' default
  for (std::size_t i = 0; i < params.size(); ++i) {
    auto p = params[i].view({k, -1});
    auto grad = params[i].grad().view({k, -1});
    // L2 decay joins the gradient (SGD, Adam); AdamW decays the weights before its update.
    // One pass instead of two. Every member's arithmetic must be the same whatever else is in
    // its group (a member trains bitwise alike in a unit of any size): addcmul may fuse the
    // multiply-add, so it serves every member or none; a member without decay adds p * 0.
    if (has_l2_) grad = torch::addcmul(grad, p, l2_);
    if (has_decoupled_) p.mul_(decay_);
    // Slot 0: momentum buffer (SGD) or exp_avg (Adam). A zero buffer times momentum plus
    // the gradient is the gradient exactly: torch's first-step clone.
    auto s0 = slots_[0][i].view({k, -1});
    if (has_adaptive_) {
      s0.mul_(c0_).add_(grad * c1_);
    } else {
      s0.mul_(c0_).add_(grad);
    }
    // Every member's step is p - rate * direction, in one op whatever else its group holds:
    // SGD's direction is its (Nesterov) momentum at rate lr, Adam's exp_avg / denom at its
    // bias-corrected step size. One pass over the weights and no temporary for the update.
    torch::Tensor direction, rate = lr_;
    if (has_sgd_) direction = has_nesterov_ ? torch::where(nesterov_, grad + s0 * c0_, s0) : s0;
    if (has_adaptive_) {
      auto s1 = slots_[1][i].view({k, -1});
      s1.mul_(b2_).add_(grad * grad * omb2_);
      auto adam = s0 / (s1.sqrt() / bias2).add_(eps);
      direction = has_sgd_ ? torch::where(adaptive_, adam, direction) : adam;
      rate = has_sgd_ ? torch::where(adaptive_, step_size, lr_) : step_size;
    }
    p.addcmul_(direction, rate, -1);
  }
}

std::vector<std::vector<torch::Tensor>> FusedOptimizer::member_state(std::int64_t k) const {
  std::vector<std::vector<torch::Tensor>> out;
  const std::size_t slots = kind(k) == "sgd" ? 1 : 2;
  for (std::size_t s = 0; s < slots; ++s) {
    std::vector<torch::Tensor> tensors;
    for (const auto& t : slots_[s]) tensors.push_back(t.select(0, k));
    out.push_back(std::move(tensors));
  }
  return out;
}

}  // namespace packtune::actors
