// rmsprop against torch::optim::RMSprop, with and without momentum and weight decay: a member
// fused with SGD and Adam members steps as it does alone, bit for bit on the CPU's one pass,
// and as LibTorch's RMSprop to rounding, in both forms; its checkpoint slots are torch's state.
// LibTorch first: its logging header defines a CHECK macro that Catch's must replace.
#include "optimizer_check.hpp"

#include "actors/torch_compat.hpp"
#include "spec/optimizer_table.hpp"

using namespace packtune;

namespace {

constexpr int kSteps = 6;

std::vector<spec::OptimizerSpec> members() {
  const auto parse = [](const tuners::TrialConfig& config) { return spec::parse_trial_spec(config).optimizer; };
  return {
      parse({{"optimizer", std::string("rmsprop")}, {"lr", 0.01}, {"alpha", 0.9}}),
      parse({{"optimizer", std::string("rmsprop")}, {"lr", 0.003}, {"momentum", 0.9}, {"weight_decay", 1e-3}}),
      parse({{"optimizer", std::string("sgd")}, {"lr", 0.05}, {"momentum", 0.9}}),
      parse({{"optimizer", std::string("adam")}, {"lr", 1e-3}, {"weight_decay", 1e-4}}),
  };
}

optimizer_check::Draws draws() { return optimizer_check::draws(11, {{4, 50, 7}, {4, 7}}, kSteps); }

optimizer_check::Trained train(const std::vector<std::int64_t>& rows, actors::CpuStep mode) {
  return optimizer_check::train(draws(), members(), rows, mode);
}

// LibTorch's RMSprop over member m alone.
std::pair<std::vector<torch::Tensor>, std::unique_ptr<torch::optim::RMSprop>> torch_alone(std::int64_t m) {
  const auto d = draws();
  const auto spec = members()[static_cast<std::size_t>(m)];
  std::vector<torch::Tensor> params;
  for (const auto& p : d.start) params.push_back(p[m].clone().requires_grad_(true));
  auto optimizer = std::make_unique<torch::optim::RMSprop>(
      params, torch::optim::RMSpropOptions(spec.lr).alpha(spec.alpha).eps(1e-8).momentum(spec.momentum).weight_decay(
                  spec.weight_decay));
  for (int step = 0; step < kSteps; ++step) {
    for (std::size_t i = 0; i < params.size(); ++i) params[i].mutable_grad() = d.grads[step][i][m].clone();
    optimizer->step();
  }
  return {params, std::move(optimizer)};
}

using optimizer_check::check_close;

}  // namespace

TEST_CASE("rmsprop: fused as alone bit for bit, and as torch::optim::RMSprop, state included") {
  REQUIRE(spec::optimizer_row("rmsprop").slots == std::vector<std::string>{"square_avg", "momentum_buffer"});
  const std::vector<std::int64_t> all = {0, 1, 2, 3};
  const auto fused = train(all, actors::CpuStep::OnePass);
  const auto tensor_form = train(all, actors::CpuStep::TensorForm);
  for (const std::int64_t m : {0, 1}) {
    const auto alone = train({m}, actors::CpuStep::OnePass);
    const auto [reference, optimizer] = torch_alone(m);
    for (std::size_t i = 0; i < fused.params.size(); ++i) {
      INFO("member " << m << ", parameter " << i);
      CHECK(torch::equal(alone.params[i][0], fused.params[i][m]));
      check_close(fused.params[i][m], reference[i]);
      check_close(tensor_form.params[i][m], reference[i]);
      const auto& state = static_cast<const torch::optim::RMSpropParamState&>(
          *optimizer->state().at(actors::torch_compat::optimizer_state_key(reference[i])));
      check_close(fused.state[static_cast<std::size_t>(m)][0][i], state.square_avg());
      if (m == 1) check_close(fused.state[static_cast<std::size_t>(m)][1][i], state.momentum_buffer());
    }
  }
}
