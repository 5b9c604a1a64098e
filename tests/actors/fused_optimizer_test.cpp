// The CPU's one-pass optimizer step (optimizer_step.hpp) against the whole-tensor form a GPU
// runs, on one group of SGD with and without Nesterov momentum, Adam with L2 decay and AdamW,
// over steps whose gradients change, on three threads whose chunks start inside members.
// LibTorch first: its logging header defines a CHECK macro that Catch's must replace.
#include "optimizers/optimizer_check.hpp"
#include "spec/optimizer_table.hpp"

using namespace packtune;

namespace {

std::vector<spec::OptimizerSpec> members() {
  spec::OptimizerSpec sgd, nesterov, adam, adamw;
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
optimizer_check::Draws draws() { return optimizer_check::draws(5, {{4, 300, 7}, {4, 7}, {4, 300, 301}}, kSteps); }

// The same members with a learning-rate schedule each (over 8 steps) and unlike clipping: one
// clips at every step, one never, two now and then.
std::vector<spec::OptimizerSpec> recipe_members() {
  auto specs = members();
  const std::vector<std::string> names = {"cosine", "step", "one_cycle", "linear"};
  const std::vector<double> clips = {40.0, 0.0, 500.0, 1e9};
  for (std::size_t m = 0; m < specs.size(); ++m) {
    specs[m].schedule.name = names[m];
    specs[m].schedule.factor = 0.5;
    specs[m].grad_clip_norm = clips[m];
  }
  specs[0].schedule.warmup = 1;  // in steps here: ScheduleSteps below says how many
  return specs;
}

spec::ScheduleSteps schedule_steps(const spec::OptimizerSpec& spec) {
  return {8, spec.schedule.warmup > 0 ? 2 : 0, 3};
}

// The members `rows` of the draws trained as one group under `mode`, on three threads.
std::vector<torch::Tensor> train(const std::vector<std::int64_t>& rows, actors::CpuStep mode,
                                 bool recipes = false) {
  return optimizer_check::train(draws(), recipes ? recipe_members() : members(), rows, mode, schedule_steps, 3).params;
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

// What torch.optim and torch.nn.utils do for one member alone: the scheduler's lr set before
// each step, clip_grad_norm_ over the member's own parameters, then the optimizer's step.
std::vector<torch::Tensor> torch_alone(std::int64_t m) {
  const auto d = draws();
  const auto spec = recipe_members()[static_cast<std::size_t>(m)];
  std::vector<torch::Tensor> params;
  for (const auto& p : d.start) params.push_back(p[m].clone().requires_grad_(true));
  std::unique_ptr<torch::optim::Optimizer> optimizer;
  switch (spec::optimizer_row(spec.name).kind) {
    case spec::OptimizerKind::Sgd:
      optimizer = std::make_unique<torch::optim::SGD>(
          params, torch::optim::SGDOptions(spec.lr).momentum(spec.momentum).nesterov(spec.nesterov).weight_decay(
                      spec.weight_decay));
      break;
    case spec::OptimizerKind::Adam:
      optimizer = std::make_unique<torch::optim::Adam>(
          params, torch::optim::AdamOptions(spec.lr).betas({spec.beta1, spec.beta2}).weight_decay(spec.weight_decay));
      break;
    default:
      REQUIRE(spec.name == "adamw");
      optimizer = std::make_unique<torch::optim::AdamW>(
          params, torch::optim::AdamWOptions(spec.lr).betas({spec.beta1, spec.beta2}).weight_decay(spec.weight_decay));
  }
  for (int step = 0; step < kSteps; ++step) {
    for (std::size_t i = 0; i < params.size(); ++i) params[i].mutable_grad() = d.grads[step][i][m].clone();
    const double lr = spec.lr * spec::lr_factor(spec.schedule, schedule_steps(spec), step);
    for (auto& group : optimizer->param_groups()) group.options().set_lr(lr);
    if (spec.grad_clip_norm > 0) torch::nn::utils::clip_grad_norm_(params, spec.grad_clip_norm);
    optimizer->step();
  }
  return params;
}

TEST_CASE("schedules and clipping per member: fused as alone bit for bit, and as torch.optim with its scheduler and "
          "clip_grad_norm_") {
  const std::vector<std::int64_t> all = {0, 1, 2, 3};
  const auto fused = train(all, actors::CpuStep::OnePass, true);
  const auto tensor_form = train(all, actors::CpuStep::TensorForm, true);
  const auto plain = train(all, actors::CpuStep::OnePass, false);
  for (const auto m : all) {
    const auto alone = train({m}, actors::CpuStep::OnePass, true);
    const auto reference = torch_alone(m);
    for (std::size_t i = 0; i < fused.size(); ++i) {
      INFO("parameter " << i << ", member " << m);
      CHECK(torch::equal(alone[i][0], fused[i][m]));
      const auto scale = reference[i].abs().max().item<double>();
      CHECK((fused[i][m] - reference[i]).abs().max().item<double>() <= 1e-5 * scale);
      CHECK((tensor_form[i][m] - reference[i]).abs().max().item<double>() <= 1e-5 * scale);
      // The recipes change every member's numbers: the test would not pass on constant rates.
      CHECK_FALSE(torch::allclose(fused[i][m], plain[i][m]));
    }
  }
}
