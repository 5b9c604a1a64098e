#pragma once
// What the fused optimizer's tests share: random starts and gradients for K stacked members,
// a FusedOptimizer that trains some of those members as one group, and closeness to LibTorch's
// own optimizer to rounding. Include it after LibTorch and before Catch (its logging header
// defines a CHECK macro that Catch's must replace).
#include <cstdint>
#include <functional>
#include <vector>

#include <ATen/Parallel.h>

#include "actors/fused_optimizer.hpp"

#include <catch2/catch.hpp>

namespace packtune::optimizer_check {

struct Draws {
  std::vector<torch::Tensor> start;               // parameter -> [K, ...]
  std::vector<std::vector<torch::Tensor>> grads;  // step -> parameter -> [K, ...]
};

// Each gradient is scaled by its step number (1, 2, ...), so later steps move further.
inline Draws draws(std::uint64_t seed, const std::vector<std::vector<std::int64_t>>& shapes, int steps) {
  torch::manual_seed(seed);
  Draws d;
  for (const auto& shape : shapes) d.start.push_back(torch::randn(shape));
  for (int s = 0; s < steps; ++s) {
    d.grads.emplace_back();
    for (const auto& shape : shapes) d.grads.back().push_back(torch::randn(shape) * (s + 1));
  }
  return d;
}

struct Trained {
  std::vector<torch::Tensor> params;                             // parameter -> [rows, ...]
  std::vector<std::vector<std::vector<torch::Tensor>>> state;  // member -> slot -> parameter
};

using ScheduleOf = std::function<spec::ScheduleSteps(const spec::OptimizerSpec&)>;

// The members `rows` of the draws (each with its spec in `specs`) trained as one group under
// `mode`, with each member's schedule from `schedule` (none: constant) and, when `threads` > 0,
// on that many threads.
inline Trained train(const Draws& d, const std::vector<spec::OptimizerSpec>& specs,
                     const std::vector<std::int64_t>& rows, actors::CpuStep mode, const ScheduleOf& schedule = {},
                     int threads = 0) {
  const auto index = torch::tensor(rows);
  Trained t;
  for (const auto& p : d.start) t.params.push_back(p.index_select(0, index));
  actors::FusedOptimizer optimizer(torch::kCPU, mode);
  std::vector<torch::Tensor> member_shapes;
  for (const auto& p : t.params) member_shapes.push_back(torch::zeros_like(p[0]));
  for (const auto r : rows) {
    const auto& spec = specs[static_cast<std::size_t>(r)];
    optimizer.append_member(spec, member_shapes, {}, 0, schedule ? schedule(spec) : spec::ScheduleSteps{});
  }
  const auto before = at::get_num_threads();
  if (threads > 0) at::set_num_threads(threads);
  for (const auto& grads : d.grads) {
    for (std::size_t i = 0; i < t.params.size(); ++i) t.params[i].mutable_grad() = grads[i].index_select(0, index);
    optimizer.step(t.params);
  }
  if (threads > 0) at::set_num_threads(before);
  for (std::size_t k = 0; k < rows.size(); ++k) t.state.push_back(optimizer.member_state(static_cast<std::int64_t>(k)));
  return t;
}

// Ours equals theirs to `tolerance` of theirs' largest magnitude.
inline void check_close(const torch::Tensor& ours, const torch::Tensor& theirs, double tolerance = 1e-5) {
  const auto scale = theirs.abs().max().item<double>();
  CHECK((ours - theirs).abs().max().item<double>() <= tolerance * scale);
}

}  // namespace packtune::optimizer_check
