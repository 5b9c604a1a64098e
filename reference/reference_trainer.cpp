#include "reference/reference_trainer.hpp"

#include "actors/checkpoint_tensors.hpp"
#include "actors/torch_compat.hpp"
#include "packtune/error.hpp"
#include "spec/optimizer_table.hpp"

namespace packtune::reference {

using actors::restore_tensor;
using actors::to_stored;
namespace torch_compat = actors::torch_compat;

namespace {

std::unique_ptr<torch::optim::Optimizer> make_optimizer(const spec::OptimizerSpec& o,
                                                        std::vector<torch::Tensor> params) {
  switch (spec::optimizer_row(o.name).kind) {
    case spec::OptimizerKind::Sgd:
      return std::make_unique<torch::optim::SGD>(
          params, torch::optim::SGDOptions(o.lr).momentum(o.momentum).nesterov(o.nesterov).weight_decay(o.weight_decay));
    case spec::OptimizerKind::Adam:
      return std::make_unique<torch::optim::Adam>(
          params, torch::optim::AdamOptions(o.lr).betas({o.beta1, o.beta2}).weight_decay(o.weight_decay));
    case spec::OptimizerKind::AdamW:
      return std::make_unique<torch::optim::AdamW>(
          params, torch::optim::AdamWOptions(o.lr).betas({o.beta1, o.beta2}).weight_decay(o.weight_decay));
    default:
      // An optimizer's own test holds it against torch::optim (tests/actors/optimizers/).
      throw InputError("optimizer: the reference trainer has no torch::optim for \"" + o.name + "\"");
  }
}

}  // namespace

torch::nn::Sequential build_reference_model(const spec::ModelSpec& spec, std::uint64_t trial_seed,
                                         const spec::InputShape& input, torch::Device device) {
  // The global generator is seeded from the trial's own seed right before the model is
  // built, so initialisation does not depend on what else the actor did before.
  torch::manual_seed(actors::init_seed(trial_seed));
  auto model = build_classifier(spec, input);
  model->to(device);
  return model;
}

ReferenceTrainer::ReferenceTrainer(tuners::TrialId id, const TrialSpec& spec, std::uint64_t seed,
                         const datasets::BatchStream& stream, const spec::ScheduleSteps& schedule)
    : id_(id), spec_(spec), seed_(seed), schedule_(schedule) {
  const auto shape = actors::input_shape(stream);
  model_ = build_reference_model(spec_.model, seed_, shape, stream.device());
  optimizer_ = make_optimizer(spec_.optimizer, model_->parameters());
  loss_sum_ = torch::zeros({}, torch::TensorOptions().device(stream.device()));
}

void ReferenceTrainer::train_step(datasets::BatchStream& stream) {
  auto [inputs, labels] = stream.batch(step_, spec_.batch_size, seed_);
  model_->train();
  // Dropout draws from the global generator: reseeding it per step makes the masks a
  // function of (trial, step) only, whatever other members ran in between.
  torch::manual_seed(actors::step_seed(seed_, step_));
  torch_compat::zero_grad_in_place(*optimizer_);
  const auto& o = spec_.optimizer;
  if (!o.schedule.constant()) {
    // What torch.optim.lr_scheduler does between steps: the group's lr for the next one.
    const double lr = o.lr * spec::lr_factor(o.schedule, schedule_, step_);
    for (auto& group : optimizer_->param_groups()) group.options().set_lr(lr);
  }
  auto loss = torch::nn::functional::cross_entropy(
      model_->forward(inputs), labels,
      torch::nn::functional::CrossEntropyFuncOptions().label_smoothing(spec_.label_smoothing));
  loss.backward();
  if (o.grad_clip_norm > 0) torch::nn::utils::clip_grad_norm_(model_->parameters(), o.grad_clip_norm);
  optimizer_->step();
  loss_sum_ += loss.detach();
  ++loss_count_;
  ++step_;
}

Metrics ReferenceTrainer::evaluate(const datasets::BatchStream& stream) {
  Metrics m = evaluate_on(stream.validation_inputs(), stream.validation_targets(), "val_");
  if (loss_count_ > 0) {
    m["train_loss"] = loss_sum_.item<double>() / static_cast<double>(loss_count_);
    loss_sum_.zero_();
    loss_count_ = 0;
  }
  return m;
}

Metrics ReferenceTrainer::evaluate_on(const torch::Tensor& inputs, const torch::Tensor& labels,
                                 const std::string& prefix) {
  torch::NoGradGuard no_grad;
  model_->eval();
  const std::int64_t n = inputs.size(0);
  auto loss = torch::zeros({}, torch::TensorOptions().dtype(torch::kFloat64).device(inputs.device()));
  auto correct = torch::zeros({}, torch::TensorOptions().dtype(torch::kInt64).device(inputs.device()));
  const std::int64_t chunk = spec::evaluation_chunk(spec_.batch_size);
  for (std::int64_t begin = 0; begin < n; begin += chunk) {
    const auto len = std::min(chunk, n - begin);
    auto logits = model_->forward(inputs.narrow(0, begin, len));
    auto y = labels.narrow(0, begin, len);
    loss += torch::nn::functional::cross_entropy(
                logits, y, torch::nn::functional::CrossEntropyFuncOptions().reduction(torch::kSum))
                .to(torch::kFloat64);
    correct += logits.argmax(1).eq(y).sum();
  }
  Metrics m;
  m[prefix + "loss"] = loss.item<double>() / static_cast<double>(std::max<std::int64_t>(1, n));
  m[prefix + "accuracy"] =
      static_cast<double>(correct.item<std::int64_t>()) / static_cast<double>(std::max<std::int64_t>(1, n));
  return m;
}

namespace {

template <class AdamState>
std::int64_t capture_adam_state(const torch::optim::Optimizer& optimizer, const std::string& name,
                                const torch::Tensor& p, TrialCheckpoint& c) {
  const auto it = optimizer.state().find(torch_compat::optimizer_state_key(p));
  if (it == optimizer.state().end()) {
    c.optimizer_state.push_back(to_stored(name + "/exp_avg", torch::zeros_like(p)));
    c.optimizer_state.push_back(to_stored(name + "/exp_avg_sq", torch::zeros_like(p)));
    return 0;
  }
  const auto& state = static_cast<const AdamState&>(*it->second);
  c.optimizer_state.push_back(to_stored(name + "/exp_avg", state.exp_avg()));
  c.optimizer_state.push_back(to_stored(name + "/exp_avg_sq", state.exp_avg_sq()));
  return state.step();
}

template <class AdamState>
void restore_adam_state(torch::optim::Optimizer& optimizer, const std::string& name, const torch::Tensor& p,
                        const TrialCheckpoint& c) {
  auto state = std::make_unique<AdamState>();
  state->step(c.optimizer_steps);
  state->exp_avg(restore_tensor(c, name + "/exp_avg", p, true));
  state->exp_avg_sq(restore_tensor(c, name + "/exp_avg_sq", p, true));
  optimizer.state()[torch_compat::optimizer_state_key(p)] = std::move(state);
}

}  // namespace

void ReferenceTrainer::capture(TrialCheckpoint& c) const {
  torch::NoGradGuard no_grad;
  for (const auto& p : model_->named_parameters()) c.model.push_back(to_stored(p.key(), p.value()));
  for (const auto& b : model_->named_buffers()) c.model.push_back(to_stored(b.key(), b.value()));
  const auto kind = spec::optimizer_row(spec_.optimizer.name).kind;
  c.optimizer = spec_.optimizer.name;
  c.optimizer_steps = step_;
  for (const auto& p : model_->named_parameters()) {
    if (kind == spec::OptimizerKind::Adam) {
      c.optimizer_steps = capture_adam_state<torch::optim::AdamParamState>(*optimizer_, p.key(), p.value(), c);
    } else if (kind == spec::OptimizerKind::AdamW) {
      c.optimizer_steps = capture_adam_state<torch::optim::AdamWParamState>(*optimizer_, p.key(), p.value(), c);
    } else {
      // Without momentum torch keeps no buffer; a zero buffer is equivalent.
      const auto it = optimizer_->state().find(torch_compat::optimizer_state_key(p.value()));
      const auto buffer = it == optimizer_->state().end()
                              ? torch::zeros_like(p.value())
                              : static_cast<const torch::optim::SGDParamState&>(*it->second).momentum_buffer();
      c.optimizer_state.push_back(to_stored(p.key() + "/momentum_buffer", buffer));
    }
  }
  c.step = step_;
  c.train_loss_sum = loss_sum_.item<double>();
  c.train_loss_count = loss_count_;
}

void ReferenceTrainer::restore(const TrialCheckpoint& c) {
  if (c.optimizer != spec_.optimizer.name) {
    throw InputError("checkpoint of trial " + std::to_string(c.trial) + ": written for optimizer " + c.optimizer +
                     ", but the trial uses " + spec_.optimizer.name);
  }
  const auto kind = spec::optimizer_row(spec_.optimizer.name).kind;
  actors::load_model_state(*model_, c);
  auto& optimizer = *optimizer_;
  optimizer.state().clear();
  // Step 0 has no state yet: torch creates it on the first step, as for a fresh trial.
  if (c.optimizer_steps > 0) {
    for (const auto& p : model_->named_parameters()) {
      if (kind == spec::OptimizerKind::Adam) {
        restore_adam_state<torch::optim::AdamParamState>(optimizer, p.key(), p.value(), c);
      } else if (kind == spec::OptimizerKind::AdamW) {
        restore_adam_state<torch::optim::AdamWParamState>(optimizer, p.key(), p.value(), c);
      } else if (spec_.optimizer.momentum != 0) {
        auto state = std::make_unique<torch::optim::SGDParamState>();
        state->momentum_buffer(restore_tensor(c, p.key() + "/momentum_buffer", p.value(), true));
        optimizer.state()[torch_compat::optimizer_state_key(p.value())] = std::move(state);
      }
    }
  }
  step_ = c.step;
  loss_sum_.fill_(c.train_loss_sum);
  loss_count_ = c.train_loss_count;
}

}  // namespace packtune::reference
