#include "actors/fused_optimizer.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>

#include <ATen/Parallel.h>

#include "layers/layer.hpp"
#include "packtune/error.hpp"
#include "spec/optimizer_table.hpp"

namespace packtune::actors {

FusedOptimizer::FusedOptimizer(torch::Device device, CpuStep cpu_step) : device_(device), cpu_step_(cpu_step) {}

torch::Tensor FusedOptimizer::column(const std::vector<double>& values, torch::Dtype dtype) const {
  // Host doubles rounded to float32 once, exactly as LibTorch rounds a scalar argument.
  return torch::tensor(values, torch::TensorOptions().dtype(torch::kFloat64))
      .to(dtype)
      .view({static_cast<std::int64_t>(values.size()), 1})
      .to(device_);
}

FusedOptimizer::Present& FusedOptimizer::present(spec::OptimizerKind kind,
                                                 const std::vector<torch::Tensor>& member_shapes) {
  auto it = std::find_if(present_.begin(), present_.end(), [&](const Present& p) { return p.kind == kind; });
  if (it != present_.end()) return *it;
  Present p;
  p.kind = kind;
  p.step = make_optimizer_step(kind);
  // The rows already there get zeros: their own optimizer never reads these.
  const auto k = static_cast<std::int64_t>(hyper_.size());
  p.slots.resize(spec::optimizer_row(kind).slots.size());
  for (auto& slot : p.slots) {
    for (const auto& shape : member_shapes) {
      auto sizes = shape.sizes().vec();
      sizes.insert(sizes.begin(), k);
      slot.push_back(k > 0 ? torch::zeros(sizes, shape.options()) : torch::Tensor());
    }
  }
  // In the table's order, whatever order members come in.
  it = std::find_if(present_.begin(), present_.end(), [&](const Present& q) { return q.kind > kind; });
  return *present_.insert(it, std::move(p));
}

void FusedOptimizer::append_member(const spec::OptimizerSpec& spec,
                                   const std::vector<torch::Tensor>& member_shapes,
                                   const std::vector<std::vector<torch::Tensor>>& state, std::int64_t steps,
                                   const spec::ScheduleSteps& schedule) {
  const auto& row = spec::optimizer_row(spec.name);
  if (!state.empty() && state.size() != row.slots.size()) {
    throw Error("a " + spec.name + " member needs " + std::to_string(row.slots.size()) + " optimizer state slots");
  }
  present(row.kind, member_shapes);
  for (auto& p : present_) {
    const bool own = p.kind == row.kind && !state.empty();
    for (std::size_t s = 0; s < p.slots.size(); ++s) {
      auto& slot = p.slots[s];
      for (std::size_t i = 0; i < member_shapes.size(); ++i) {
        auto value = (own ? state[s][i].to(member_shapes[i].options()).reshape(member_shapes[i].sizes())
                          : torch::zeros_like(member_shapes[i]))
                         .unsqueeze(0);
        slot[i] = slot[i].defined() ? torch::cat({slot[i], value}) : value.clone();
      }
    }
  }
  hyper_.push_back(spec);
  steps_.push_back(steps);
  schedules_.push_back(schedule);
  refresh();
}

void FusedOptimizer::keep_members(const std::vector<std::int64_t>& keep) {
  std::vector<spec::OptimizerSpec> hyper;
  std::vector<std::int64_t> steps;
  std::vector<spec::ScheduleSteps> schedules;
  for (auto k : keep) {
    hyper.push_back(hyper_[static_cast<std::size_t>(k)]);
    steps.push_back(steps_[static_cast<std::size_t>(k)]);
    schedules.push_back(schedules_[static_cast<std::size_t>(k)]);
  }
  hyper_ = std::move(hyper);
  steps_ = std::move(steps);
  schedules_ = std::move(schedules);
  if (!keep.empty()) {
    auto index = torch::tensor(keep, torch::kInt64).to(device_);
    for (auto& p : present_) {
      for (auto& slot : p.slots) {
        for (auto& t : slot) t = t.index_select(0, index);
      }
    }
  }
  refresh();  // drops the optimizers whose last member left
}

void FusedOptimizer::copy_member(std::int64_t from, std::int64_t to, const spec::OptimizerSpec& spec) {
  const auto f = static_cast<std::size_t>(from), t = static_cast<std::size_t>(to);
  if (hyper_[f].name != spec.name) {
    throw Error("optimizer " + spec.name + " cannot take the state of a " + hyper_[f].name + " member");
  }
  torch::NoGradGuard no_grad;
  for (auto& p : present_) {
    for (auto& slot : p.slots) {
      for (auto& state : slot) state[to].copy_(state[from]);
    }
  }
  steps_[t] = steps_[f];
  hyper_[t] = spec;
  refresh();
}

void FusedOptimizer::resize(const std::vector<std::vector<std::int64_t>>& shapes) {
  for (auto& p : present_) {
    for (auto& slot : p.slots) {
      for (std::size_t i = 0; i < slot.size(); ++i) slot[i] = layers::fit_to(slot[i], shapes[i]);
    }
  }
}

double FusedOptimizer::decay_factor(std::size_t m, double rate) const {
  return decoupled_[m] ? 1 - rate * hyper_[m].weight_decay : 1.0;
}

void FusedOptimizer::refresh() {
  has_l2_ = has_decoupled_ = false;
  scheduled_ = clipped_ = false;
  cpu_rates_.clear();
  owner_.clear();
  rates_.clear();
  decoupled_.clear();
  std::vector<spec::OptimizerKind> kinds;
  for (const auto& h : hyper_) {
    const auto& row = spec::optimizer_row(h.name);
    kinds.push_back(row.kind);
    decoupled_.push_back(row.decay == spec::WeightDecay::Decoupled);
  }
  // An optimizer whose last member left goes, with its state.
  present_.erase(std::remove_if(present_.begin(), present_.end(),
                                [&](const Present& p) {
                                  return std::find(kinds.begin(), kinds.end(), p.kind) == kinds.end();
                                }),
                 present_.end());
  if (hyper_.empty()) return;
  std::vector<double> l2, decay, steps, clip;
  for (std::size_t m = 0; m < hyper_.size(); ++m) {
    const auto& h = hyper_[m];
    const bool decoupled = decoupled_[m];
    scheduled_ |= !h.schedule.constant();
    clipped_ |= h.grad_clip_norm > 0;
    clip.push_back(h.grad_clip_norm > 0 ? h.grad_clip_norm : std::numeric_limits<double>::infinity());
    has_l2_ |= !decoupled && h.weight_decay != 0;
    has_decoupled_ |= decoupled && h.weight_decay != 0;
    rates_.push_back(h.lr);
    l2.push_back(decoupled ? 0.0 : h.weight_decay);
    decay.push_back(decay_factor(m, h.lr));
    steps.push_back(static_cast<double>(steps_[m]));
    // Rounded to float from the same doubles as the columns, as LibTorch rounds a Scalar.
    cpu_rates_.push_back({static_cast<float>(h.lr), static_cast<float>(l2.back()), static_cast<float>(decay.back())});
    owner_.push_back(static_cast<std::size_t>(
        std::find_if(present_.begin(), present_.end(), [&](const Present& p) { return p.kind == kinds[m]; }) -
        present_.begin()));
  }
  columns_.lr = column(rates_);
  columns_.lr64 = column(rates_, torch::kFloat64);
  columns_.steps64 = column(steps, torch::kFloat64);
  l2_ = column(l2);
  decay_ = column(decay);
  clip_norm_ = column(clip);
  if (device_.is_cpu()) {
    host_ = {columns_.lr, columns_.lr64, decay_};
  } else if (scheduled_) {
    host_ = {columns_.lr.cpu(), columns_.lr64.cpu(), decay_.cpu()};
  }
  const MakeColumn make = [this](const std::vector<double>& values, at::ScalarType dtype) {
    return column(values, dtype);
  };
  for (std::size_t o = 0; o < present_.size(); ++o) {
    std::vector<bool> own;
    std::vector<double> mask;
    for (auto owner : owner_) {
      own.push_back(owner == o);
      mask.push_back(owner == o ? 1.0 : 0.0);
    }
    present_[o].mask = column(mask, torch::kBool);
    present_[o].step->refresh(hyper_, own, make);
  }
  // The columns hold the base rates; the step's own come with its schedule_step().
}

double FusedOptimizer::scheduled_lr(std::int64_t k) const {
  const auto m = static_cast<std::size_t>(k);
  const auto& h = hyper_[m];
  return h.schedule.constant() ? h.lr : h.lr * spec::lr_factor(h.schedule, schedules_[m], steps_[m]);
}

void FusedOptimizer::schedule_step() {
  if (!scheduled_) return;
  // Written on the host into tensors made once per membership (refresh), then copied in place:
  // a captured step reads the device columns where they are. A double rounds to float here as
  // LibTorch's .to(kFloat32) rounds it, so the columns hold what column() would have made.
  auto* lr = host_.lr.data_ptr<float>();
  auto* lr64 = host_.lr64.data_ptr<double>();
  auto* decay = host_.decay.data_ptr<float>();
  for (std::size_t m = 0; m < hyper_.size(); ++m) {
    rates_[m] = scheduled_lr(static_cast<std::int64_t>(m));
    // A decoupled decay follows the step's rate, as torch's scheduler sets the group's lr.
    const double factor = decay_factor(m, rates_[m]);
    lr[m] = cpu_rates_[m].rate = static_cast<float>(rates_[m]);
    lr64[m] = rates_[m];
    decay[m] = cpu_rates_[m].decay = static_cast<float>(factor);
  }
  if (host_.lr.data_ptr() == columns_.lr.data_ptr()) return;  // on a CPU they are the columns
  torch::NoGradGuard no_grad;
  columns_.lr.copy_(host_.lr);
  columns_.lr64.copy_(host_.lr64);
  decay_.copy_(host_.decay);
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
    if (!usable(params[i]) || !usable(params[i].grad())) return false;
    for (const auto& p : present_) {
      for (const auto& slot : p.slots) {
        if (!usable(slot[i])) return false;
      }
    }
  }
  // The step count is the device-side one the tensor form keeps (step() and FusedGroup call
  // count_step() and device_step() in either order).
  columns_.steps64.add_(1);
  const double* counts = columns_.steps64.data_ptr<double>();
  for (auto& p : present_) p.step->begin_rows(rates_, counts);
  // Elementwise, so any split over threads gives the same numbers.
  constexpr std::int64_t kGrain = 1 << 15;
  for (std::size_t i = 0; i < params.size(); ++i) {
    const auto row = params[i].numel() / k;
    float* w = params[i].data_ptr<float>();
    const float* g = params[i].grad().data_ptr<float>();
    std::vector<std::vector<float*>> slots;  // optimizer -> slot -> its [K, ...] data
    for (const auto& p : present_) {
      slots.emplace_back();
      for (const auto& slot : p.slots) slots.back().push_back(slot[i].data_ptr<float>());
    }
    at::parallel_for(0, k * row, kGrain, [&](std::int64_t begin, std::int64_t end) {
      std::array<float*, kMaxSlots> at_member{};
      while (begin < end) {
        const auto m = begin / row;
        const auto stop = std::min(end, (m + 1) * row);
        const auto o = owner_[static_cast<std::size_t>(m)];
        for (std::size_t s = 0; s < slots[o].size(); ++s) at_member[s] = slots[o][s] + begin;
        present_[o].step->rows(static_cast<std::size_t>(m), cpu_rates_[static_cast<std::size_t>(m)], w + begin,
                               g + begin, at_member.data(), stop - begin);
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
  columns_.steps64.add_(1);
  for (auto& p : present_) p.step->begin(columns_);
  for (std::size_t i = 0; i < params.size(); ++i) {
    auto p = params[i].view({k, -1});
    auto grad = params[i].grad().view({k, -1});
    // L2 decay joins the gradient; a decoupled decay shrinks the weights before the update.
    // One pass instead of two. Every member's arithmetic must be the same whatever else is in
    // its group (a member trains bitwise alike in a unit of any size): addcmul may fuse the
    // multiply-add, so it serves every member or none; a member without decay adds p * 0.
    if (has_l2_) grad = torch::addcmul(grad, p, l2_);
    if (has_decoupled_) p.mul_(decay_);
    // Every member's step is p - rate * direction, in one op whatever else its group holds:
    // one pass over the weights and no temporary for the update.
    torch::Tensor direction, rate;
    for (auto& o : present_) {
      std::vector<torch::Tensor> slots;
      for (const auto& slot : o.slots) slots.push_back(slot[i].view({k, -1}));
      auto update = o.step->update(grad, slots, columns_);
      if (!direction.defined()) {
        direction = std::move(update.direction);
        rate = std::move(update.rate);
      } else {
        direction = torch::where(o.mask, update.direction, direction);
        rate = torch::where(o.mask, update.rate, rate);
      }
    }
    p.addcmul_(direction, rate, -1);
  }
}

std::vector<std::vector<torch::Tensor>> FusedOptimizer::member_state(std::int64_t k) const {
  std::vector<std::vector<torch::Tensor>> out;
  for (const auto& slot : owner(k).slots) {
    std::vector<torch::Tensor> tensors;
    for (const auto& t : slot) tensors.push_back(t.select(0, k));
    out.push_back(std::move(tensors));
  }
  return out;
}

}  // namespace packtune::actors
