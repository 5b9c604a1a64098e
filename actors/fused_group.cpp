#include "actors/fused_group.hpp"

#include <algorithm>

#include "actors/autocast.hpp"
#include "actors/checkpoint_tensors.hpp"
#include "actors/torchscript_model.hpp"
#include "layers/member_seeds.hpp"
#include "packtune/error.hpp"
#include "spec/optimizer_table.hpp"

namespace packtune::actors {
namespace {

// splitmix64: spreads nearby (seed, step) pairs over unrelated generator seeds.
std::uint64_t mix(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// [K, ...] from K tensors; a unit of one (most trials on a CPU) takes a view, not a copy.
torch::Tensor stack_members(const std::vector<torch::Tensor>& tensors) {
  return tensors.size() == 1 ? tensors.front().unsqueeze(0) : torch::stack(tensors);
}

}  // namespace

std::uint64_t init_seed(std::uint64_t trial_seed) { return mix(trial_seed); }

std::uint64_t step_seed(std::uint64_t trial_seed, std::int64_t step) {
  return mix(trial_seed ^ mix(static_cast<std::uint64_t>(step) + 1));
}

std::shared_ptr<layers::Layer> build_member_model(const spec::ModelSpec& spec, std::uint64_t trial_seed,
                                                  const spec::InputShape& input, torch::Device device) {
  // The global generator is seeded from the trial's own seed right before the model is
  // built, so initialisation does not depend on what else the actor did before.
  torch::manual_seed(init_seed(trial_seed));
  // A TorchScript file is loaded straight onto the device: its constants are not parameters,
  // which to() would move.
  if (spec::torchscript_family(spec)) return build_torchscript_model(spec, input, device);
  auto model = build_model(spec, input);
  model->to(device);
  return model;
}

FusedGroup::FusedGroup(const spec::TrialSpec& spec, const spec::InputShape& input, torch::Device device, CpuStep cpu_step)
    : key_(spec::fusion_key(spec)), input_(input), device_(device), optimizer_(device, cpu_step) {}

bool FusedGroup::contains(tuners::TrialId trial) const { return index_of(trial) >= 0; }

std::int64_t FusedGroup::index_of(tuners::TrialId trial) const {
  for (std::size_t i = 0; i < members_.size(); ++i) {
    if (members_[i].trial == trial) return static_cast<std::int64_t>(i);
  }
  return -1;
}

std::int64_t FusedGroup::step_of(tuners::TrialId trial) const {
  const auto k = index_of(trial);
  if (k < 0) throw Error("trial " + std::to_string(trial) + " is not in this fused group");
  return members_[static_cast<std::size_t>(k)].step;
}

void FusedGroup::refresh_parameters() {
  params_ = model_ ? model_->stacked_parameters() : std::vector<layers::Layer::Stacked>{};
  param_tensors_.clear();
  for (const auto& p : params_) param_tensors_.push_back(p.tensor);
}

void FusedGroup::add(tuners::TrialId trial, const spec::TrialSpec& spec, std::uint64_t seed,
                     const TrialCheckpoint* resume, const spec::ScheduleSteps& schedule) {
  if (spec::fusion_key(spec) != key_) throw Error("trial " + std::to_string(trial) + " cannot join fused group " + key_);
  if (contains(trial)) throw Error("trial " + std::to_string(trial) + " is already in this fused group");
  torch::NoGradGuard no_grad;
  // Everything that can fail (a checkpoint of another architecture) happens before the
  // group changes.
  auto solo = build_member_model(spec.model, seed, input_, device_);
  const auto solo_params = solo->stacked_parameters();
  std::vector<std::vector<torch::Tensor>> optimizer_state;  // slot -> parameter, own member layout
  if (resume) {
    if (resume->optimizer != spec.optimizer.name) {
      throw InputError("checkpoint of trial " + std::to_string(resume->trial) + ": written for optimizer " +
                       resume->optimizer + ", but the trial uses " + spec.optimizer.name);
    }
    load_member_state(*solo, *resume);
    // Step 0 has no optimizer state yet; the member starts from zeros like a new one.
    if (resume->optimizer_steps > 0) {
      for (const auto& slot : spec::optimizer_row(spec.optimizer.name).slots) {
        std::vector<torch::Tensor> tensors;
        for (const auto& p : solo_params) {
          const auto like = layers::Layer::solo_view(p, p.tensor.detach()[0], 0);
          tensors.push_back(layers::Layer::member_layout(p.layout, restore_tensor(*resume, p.name + "/" + slot, like, true)));
        }
        optimizer_state.push_back(std::move(tensors));
      }
    }
  }
  graph_.reset();  // the stacked tensors a captured step works on are about to be replaced
  const auto k = static_cast<std::int64_t>(members_.size());
  if (model_) {
    model_->append(*solo);
  } else {
    model_ = solo;
  }
  refresh_parameters();
  // The others' optimizer state follows the (maybe wider) stacked shapes; the new member's
  // own state is padded to them.
  std::vector<std::vector<std::int64_t>> shapes;
  std::vector<torch::Tensor> member_rows;
  for (const auto& t : param_tensors_) {
    auto shape = t.sizes().vec();
    shape[0] = k;
    shapes.push_back(shape);
    member_rows.push_back(t.detach()[k]);
  }
  optimizer_.resize(shapes);
  for (auto& slot : optimizer_state) {
    for (std::size_t i = 0; i < slot.size(); ++i) slot[i] = layers::fit_to(slot[i], member_rows[i].sizes());
  }
  optimizer_.append_member(spec.optimizer, member_rows, optimizer_state, resume ? resume->optimizer_steps : 0,
                           schedule);
  members_.push_back({trial, spec, seed, resume ? resume->step : 0});
  auto loss = torch::full({1}, resume ? resume->train_loss_sum : 0.0, torch::TensorOptions().device(device_));
  loss_sum_ = loss_sum_.defined() ? torch::cat({loss_sum_, loss}) : loss;
  loss_count_.push_back(resume ? resume->train_loss_count : 0);
}

void FusedGroup::exploit(tuners::TrialId trial, tuners::TrialId from, const spec::TrialSpec& spec) {
  const auto to = index_of(trial), source = index_of(from);
  if (to < 0 || source < 0 || to == source) {
    throw Error("exploit: trials " + std::to_string(trial) + " and " + std::to_string(from) +
                " must be two members of this fused group");
  }
  const auto& donor = members_[static_cast<std::size_t>(source)];
  if (spec::shape_key(spec) != spec::shape_key(donor.spec) || spec.optimizer.name != donor.spec.optimizer.name) {
    throw InputError("trial " + std::to_string(trial) + " cannot take trial " + std::to_string(from) +
                     "'s weights: its config changes the architecture or the optimizer");
  }
  const auto& own = members_[static_cast<std::size_t>(to)];
  if (!(spec.model == own.spec.model)) {
    // The layers keep each member's own widths, padding and dropout outside the stacked
    // tensors: a member whose model values change is rebuilt, from the donor's state. If
    // that fails (out of memory), the member is put back as it was.
    TrialCheckpoint donor_state, own_state;
    capture(from, donor_state);
    capture(trial, own_state);
    const auto seed = own.seed;
    const auto own_spec = own.spec;
    remove(trial);
    try {
      add(trial, spec, seed, &donor_state);
    } catch (...) {
      add(trial, own_spec, seed, &own_state);
      throw;
    }
    return;
  }
  torch::NoGradGuard no_grad;
  graph_.reset();  // a captured step would replay with the optimizer's old per-member columns
  for (const auto& entry : model_->stacked_parameters()) entry.tensor.detach()[to].copy_(entry.tensor.detach()[source]);
  for (const auto& entry : model_->stacked_buffers()) entry.tensor[to].copy_(entry.tensor[source]);
  optimizer_.copy_member(source, to, spec.optimizer);
  auto& member = members_[static_cast<std::size_t>(to)];
  member.spec = spec;
  member.step = donor.step;
  loss_sum_[to].copy_(loss_sum_[source]);
  loss_count_[static_cast<std::size_t>(to)] = loss_count_[static_cast<std::size_t>(source)];
}

void FusedGroup::remove(tuners::TrialId trial) {
  const auto gone = index_of(trial);
  if (gone < 0) return;
  std::vector<std::int64_t> keep;
  for (std::int64_t i = 0; i < size(); ++i) {
    if (i != gone) keep.push_back(i);
  }
  members_.erase(members_.begin() + gone);
  loss_count_.erase(loss_count_.begin() + gone);
  graph_.reset();
  optimizer_.keep_members(keep);
  if (keep.empty()) {
    model_.reset();
    refresh_parameters();
    loss_sum_ = torch::Tensor();
    return;
  }
  torch::NoGradGuard no_grad;
  model_->keep(keep);  // shrinks to the widest remaining member
  refresh_parameters();
  std::vector<std::vector<std::int64_t>> shapes;
  for (const auto& t : param_tensors_) shapes.push_back(t.sizes().vec());
  optimizer_.resize(shapes);
  loss_sum_ = loss_sum_.index_select(0, torch::tensor(keep, torch::kInt64).to(device_));
}

void FusedGroup::prefetch(datasets::BatchStream& stream) const {
  for (const auto& m : members_) stream.batch(m.step, m.spec.batch_size, m.seed);
}

void FusedGroup::train_step(datasets::BatchStream& stream) {
  if (members_.empty()) return;
  const int batch_size = members_.front().spec.batch_size;
  // Everything that differs from step to step is decided here, on the host: which batch each
  // member reads and the seed of its draws. The device part of the step sees only these
  // tensors, so a CUDA graph of it stays right at every replay.
  std::vector<torch::Tensor> inputs, labels;
  std::vector<std::int64_t> seeds;
  for (const auto& m : members_) {
    auto [x, y] = stream.batch(m.step, batch_size, m.seed);
    inputs.push_back(x);
    labels.push_back(y);
    seeds.push_back(static_cast<std::int64_t>(step_seed(m.seed, m.step) & 0xffffffffULL));
  }
  auto seed_tensor = torch::tensor(seeds, torch::kInt64);
  // From pageable memory the copy would wait for the device to finish the step in flight.
  // pin_memory() draws on LibTorch's caching host allocator, which hands a block out again only
  // once the copy that read it has finished; a buffer kept here would need that bookkeeping.
  if (device_.is_cuda()) seed_tensor = seed_tensor.pin_memory().to(device_, /*non_blocking=*/true);
  std::vector<torch::Tensor> step_inputs{stack_members(inputs), stack_members(labels), seed_tensor};
  optimizer_.schedule_step();
  update_smoothing();
  if (spec::torchscript_family(members_.front().spec.model)) {
    // Never captured: a TorchScript module's forward does host work at every step (it binds
    // its slots and seeds its draws), which a replayed graph would skip.
    device_step(step_inputs);
  } else {
    graph_.run(
        step_inputs, [this](const std::vector<torch::Tensor>& in) { device_step(in); },
        [this] {
          for (auto& p : param_tensors_) p.mutable_grad() = torch::Tensor();
        });
  }
  optimizer_.count_step();
  for (std::size_t i = 0; i < members_.size(); ++i) {
    ++members_[i].step;
    ++loss_count_[i];
  }
}

void FusedGroup::device_step(const std::vector<torch::Tensor>& in) {
  const auto k = static_cast<std::int64_t>(members_.size());
  const auto& x = in[0];
  const auto& y = in[1];
  const auto batch = x.size(1);
  for (auto& p : param_tensors_) {
    if (p.grad().defined()) p.mutable_grad().zero_();
  }
  model_->train();
  torch::Tensor losses;
  {
    // Under bf16 the products run in bfloat16; backward leaves float32 gradients on the float32
    // weights, so the optimizer below steps as in fp32.
    Autocast autocast(device_);
    torch::Tensor logits;
    {
      layers::MemberSeeds seeds(in[2]);
      logits = model_->forward(x);
    }
    // The sum of the members' mean losses: member k's gradient is its solo gradient.
    losses = sample_losses(logits, y, smoothing_).mean(1);
  }
  losses.sum().backward();
  for (auto& p : params_) {
    if (p.padding.defined()) p.tensor.mutable_grad().masked_fill_(p.padding, 0);
  }
  optimizer_.device_step(param_tensors_);
  loss_sum_ += losses.detach();
}

void FusedGroup::update_smoothing() {
  std::vector<double> values;
  for (const auto& m : members_) values.push_back(m.spec.label_smoothing);
  if (values == smoothing_values_) return;
  smoothing_values_ = values;
  graph_.reset();  // a captured step reads the old column
  const bool any = std::any_of(values.begin(), values.end(), [](double e) { return e > 0; });
  smoothing_ = any ? torch::tensor(values, torch::kFloat64)
                         .to(torch::kFloat32)
                         .view({static_cast<std::int64_t>(values.size()), 1})
                         .to(device_)
                   : torch::Tensor();
}

torch::Tensor FusedGroup::sample_losses(const torch::Tensor& output, const torch::Tensor& y,
                                        const torch::Tensor& smoothing) const {
  // Losses in float32 whatever the precision of the products (a no-op in fp32).
  const auto out = output.to(torch::kFloat32);
  const auto k = out.size(0), n = out.size(1);
  if (input_.task == datasets::Task::Regression) return (out - y).square().reshape({k, n, -1}).mean(2);
  if (smoothing.defined()) {
    // cross_entropy's label smoothing, per member: (1 - e) * nll + e / C * (-sum of log p). A
    // member with e = 0 gets its nll exactly, as from cross_entropy.
    const auto logp = torch::log_softmax(out, 2);  // [K, n, C]
    const auto nll = -logp.gather(2, y.unsqueeze(2)).squeeze(2);
    const auto classes = static_cast<double>(out.size(2));
    return (1 - smoothing) * nll + (-logp.sum(2)) * (smoothing / classes);
  }
  return torch::nn::functional::cross_entropy(out.reshape({k * n, -1}), y.reshape({k * n}),
                                              torch::nn::functional::CrossEntropyFuncOptions().reduction(torch::kNone))
      .view({k, n});
}

FusedGroup::Scores FusedGroup::score(const torch::Tensor& inputs, const torch::Tensor& targets) {
  torch::NoGradGuard no_grad;
  model_->eval();
  const auto k = static_cast<std::int64_t>(members_.size());
  const std::int64_t n = inputs.size(0);
  const bool regression = input_.task == datasets::Task::Regression;
  auto loss = torch::zeros({k}, torch::TensorOptions().dtype(torch::kFloat64).device(device_));
  auto second = torch::zeros({k}, torch::TensorOptions().dtype(torch::kFloat64).device(device_));
  // Each member evaluates as many examples at once as it would alone: the K-fold chunk is
  // what the memory model charges a fused group.
  const std::int64_t chunk = spec::evaluation_chunk(members_.front().spec.batch_size);
  for (std::int64_t begin = 0; begin < n; begin += chunk) {
    const auto len = std::min(chunk, n - begin);
    auto sizes = inputs.sizes().vec();
    sizes[0] = len;
    sizes.insert(sizes.begin(), k);
    auto x = inputs.narrow(0, begin, len).unsqueeze(0).expand(sizes);
    torch::Tensor out;
    {
      Autocast autocast(device_);
      out = model_->forward(x).to(torch::kFloat32);  // [K, len, outputs]
    }
    auto y_sizes = targets.sizes().vec();
    y_sizes[0] = len;
    y_sizes.insert(y_sizes.begin(), k);
    auto y = targets.narrow(0, begin, len).unsqueeze(0).expand(y_sizes);
    loss += sample_losses(out, y).sum(1).to(torch::kFloat64);
    if (regression) {
      second += (out - y).abs().reshape({k, len, -1}).mean(2).sum(1).to(torch::kFloat64);
    } else {
      second += out.argmax(2).eq(y).sum(1).to(torch::kFloat64);
    }
  }
  model_->train();
  return {loss.cpu(), second.cpu()};
}

// val_loss and val_accuracy, or, for regression, val_loss (the mean squared error, as
// trained), val_mse and val_mae: the means over `n` examples of member k's sums.
void FusedGroup::add_metrics(Metrics& m, const std::string& prefix, const Scores& s, std::int64_t k, double n) const {
  const double loss = s.loss[k].item<double>() / n;
  const double second = s.second[k].item<double>() / n;
  m[prefix + "loss"] = loss;
  if (input_.task == datasets::Task::Regression) {
    m[prefix + "mse"] = loss;
    m[prefix + "mae"] = second;
  } else {
    m[prefix + "accuracy"] = second;
  }
}

std::map<tuners::TrialId, Metrics> FusedGroup::evaluate(const datasets::BatchStream& stream,
                                                        const std::vector<tuners::TrialId>& which) {
  const auto scores = score(stream.validation_inputs(), stream.validation_targets());
  const double n = static_cast<double>(std::max<std::int64_t>(1, stream.validation_inputs().size(0)));
  auto train_host = loss_sum_.to(torch::kFloat64).cpu();
  std::map<tuners::TrialId, Metrics> out;
  for (std::size_t i = 0; i < members_.size(); ++i) {
    auto& member = members_[i];
    if (std::find(which.begin(), which.end(), member.trial) == which.end()) continue;
    const auto k = static_cast<std::int64_t>(i);
    Metrics m;
    add_metrics(m, "val_", scores, k, n);
    auto& count = loss_count_[i];
    if (count > 0) {
      m["train_loss"] = train_host[k].item<double>() / static_cast<double>(count);
      loss_sum_[k].zero_();
      count = 0;
    }
    out[member.trial] = std::move(m);
  }
  return out;
}

Metrics FusedGroup::evaluate_on(tuners::TrialId trial, const torch::Tensor& inputs, const torch::Tensor& targets,
                                const std::string& prefix) {
  const auto k = index_of(trial);
  if (k < 0) throw Error("trial " + std::to_string(trial) + " is not in this fused group");
  const double n = static_cast<double>(std::max<std::int64_t>(1, inputs.size(0)));
  Metrics m;
  add_metrics(m, prefix, score(inputs, targets), k, n);
  return m;
}

std::vector<std::pair<std::string, torch::Tensor>> FusedGroup::member_state(tuners::TrialId trial) const {
  const auto k = index_of(trial);
  if (k < 0) throw Error("trial " + std::to_string(trial) + " is not in this fused group");
  auto out = model_->member_tensors(k);
  for (auto& [name, tensor] : out) tensor = tensor.contiguous().clone();
  return out;
}

void FusedGroup::capture(tuners::TrialId trial, TrialCheckpoint& c) const {
  const auto k = index_of(trial);
  if (k < 0) throw Error("trial " + std::to_string(trial) + " is not in this fused group");
  torch::NoGradGuard no_grad;
  for (const auto& [name, tensor] : model_->member_tensors(k)) c.model.push_back(to_stored(name, tensor));
  const auto& member = members_[static_cast<std::size_t>(k)];
  const auto& slots = spec::optimizer_row(member.spec.optimizer.name).slots;
  const auto state = optimizer_.member_state(k);
  for (std::size_t i = 0; i < params_.size(); ++i) {
    for (std::size_t s = 0; s < slots.size(); ++s) {
      c.optimizer_state.push_back(
          to_stored(params_[i].name + "/" + slots[s], layers::Layer::solo_view(params_[i], state[s][i], k)));
    }
  }
  c.optimizer = member.spec.optimizer.name;
  c.optimizer_steps = optimizer_.member_steps(k);
  c.step = member.step;
  c.train_loss_sum = loss_sum_[k].item<double>();
  c.train_loss_count = loss_count_[static_cast<std::size_t>(k)];
}

}  // namespace packtune::actors
