// The CPU's one-pass optimizer step (member_step.hpp) against the whole-tensor form a GPU
// runs, on one group of SGD with and without Nesterov momentum, Adam with L2 decay and AdamW,
// over steps whose gradients change, on three threads whose chunks start inside members.
// LibTorch first: its logging header defines a CHECK macro that Catch's must replace.
#include "actors/fused_optimizer.hpp"

#include <catch2/catch.hpp>

using namespace packtune;

namespace {

std::vector<actors::OptimizerSpec> members() {
  actors::OptimizerSpec sgd, nesterov, adam, adamw;
  sgd.lr = 0.05;
  sgd.momentum = 0.9;
  sgd.weight_decay = 1e-3;
  nesterov = sgd;
  nesterov.nesterov = true;
  nesterov.weight_decay = 0;
  adam.name = "adam";
  adam.lr = 3e-3;
  adam.weight_decay = 1e-4;
  adam.beta1 = 0.8;
  adamw.name = "adamw";
  adamw.lr = 1e-3;
  adamw.weight_decay = 0.01;
  adamw.beta2 = 0.99;
  return {sgd, nesterov, adam, adamw};
}

constexpr int kSteps = 6;

// Three parameters of the four members and their gradients at each step. The largest,
// 90,300 per member, splits over three threads at 120,400: inside member 1.
struct Draws {
  std::vector<torch::Tensor> start;
  std::vector<std::vector<torch::Tensor>> grads;
};

Draws draws() {
  torch::manual_seed(5);
  Draws d;
  const std::vector<std::vector<std::int64_t>> shapes = {{4, 300, 7}, {4, 7}, {4, 300, 301}};
  for (const auto& shape : shapes) d.start.push_back(torch::randn(shape));
  for (int s = 0; s < kSteps; ++s) {
    d.grads.emplace_back();
    for (const auto& shape : shapes) d.grads.back().push_back(torch::randn(shape) * (s + 1));
  }
  return d;
}

// The members `rows` of the draws trained as one group under `mode`.
std::vector<torch::Tensor> train(const std::vector<std::int64_t>& rows, actors::CpuStep mode) {
  const auto d = draws();
  const auto specs = members();
  const auto index = torch::tensor(rows);
  std::vector<torch::Tensor> params;
  for (const auto& p : d.start) params.push_back(p.index_select(0, index));
  actors::FusedOptimizer optimizer(torch::kCPU, mode);
  std::vector<torch::Tensor> member_shapes;
  for (const auto& p : params) member_shapes.push_back(torch::zeros_like(p[0]));
  for (const auto r : rows) optimizer.append_member(specs[static_cast<std::size_t>(r)], member_shapes);
  const auto threads = at::get_num_threads();
  at::set_num_threads(3);
  for (const auto& grads : d.grads) {
    for (std::size_t i = 0; i < params.size(); ++i) params[i].mutable_grad() = grads[i].index_select(0, index);
    optimizer.step(params);
  }
  at::set_num_threads(threads);
  return params;
}

}  // namespace

TEST_CASE("a CPU group's one-pass step: each member as alone, bit for bit, and as the whole-tensor form to rounding") {
  const std::vector<std::int64_t> all = {0, 1, 2, 3};
  const auto one_pass = train(all, actors::CpuStep::OnePass);
  const auto tensor_form = train(all, actors::CpuStep::TensorForm);
  const auto specs = members();
  for (std::size_t i = 0; i < one_pass.size(); ++i) {
    for (const auto m : all) {
      INFO("parameter " << i << ", member " << m << " (" << specs[static_cast<std::size_t>(m)].name << ")");
      const auto alone = train({m}, actors::CpuStep::OnePass);
      CHECK(torch::equal(alone[i][0], one_pass[i][m]));
      // LibTorch's kernels may fuse a multiply-add that the one pass rounds twice.
      const auto scale = tensor_form[i][m].abs().max().item<double>();
      const auto diff = (one_pass[i][m] - tensor_form[i][m]).abs().max().item<double>();
      CHECK(diff <= 1e-6 * scale);
    }
  }
}
