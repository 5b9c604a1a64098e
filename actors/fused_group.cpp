#include "actors/fused_group.hpp"

#include <algorithm>

#include "actors/checkpoint_tensors.hpp"
#include "actors/member_dropout.hpp"
#include "packtune/error.hpp"

namespace packtune::actors {
namespace {

// A member's own slice of a padded tensor (a view).
torch::Tensor own_part(torch::Tensor t, const std::vector<std::int64_t>& shape) {
  for (std::size_t d = 0; d < shape.size(); ++d) t = t.narrow(static_cast<std::int64_t>(d), 0, shape[d]);
  return t;
}

}  // namespace

FusedGroup::FusedGroup(const TrialSpec& spec, const InputShape& input, torch::Device device)
    : key_(fusion_key(spec)), input_(input), device_(device), optimizer_(device) {
  // The solo model is the single description of the layer sequence; the fused layers follow
  // its children one by one, their sizes follow the members.
  auto solo = build_classifier(spec.model, input);
  int params = 0, buffers = 0, last_linear = -1;
  for (const auto& child : solo->named_children()) {
    Layer layer;
    layer.name = child.key();
    const auto& module = child.value();
    if (module->as<torch::nn::Linear>()) {
      layer.op = Op::Linear;
      layer.param = params;
      layer.bias = true;
      last_linear = params;
      params += 2;
    } else if (auto* conv = module->as<torch::nn::Conv2d>()) {
      layer.op = Op::Conv;
      layer.padding = spec.model.kernel / 2;
      layer.param = params;
      layer.bias = conv->options.bias();
      params += layer.bias ? 2 : 1;
    } else if (module->as<torch::nn::BatchNorm2d>()) {
      layer.op = Op::BatchNorm;
      layer.param = params;
      layer.bias = true;
      layer.buffer = buffers;
      params += 2;
      buffers += 2;
    } else if (module->as<torch::nn::ReLU>()) {
      layer.op = Op::Relu;
    } else if (module->as<torch::nn::Tanh>()) {
      layer.op = Op::Tanh;
    } else if (module->as<torch::nn::GELU>()) {
      layer.op = Op::Gelu;
    } else if (module->as<torch::nn::Sigmoid>()) {
      layer.op = Op::Sigmoid;
    } else if (module->as<torch::nn::MaxPool2d>()) {
      layer.op = Op::Pool;
    } else if (module->as<torch::nn::Flatten>()) {
      layer.op = Op::Flatten;
    } else if (module->as<MemberDropout>()) {
      layer.op = Op::Dropout;
      layer.dropout_index = static_cast<std::int64_t>(dropout_params_.size());
      dropout_params_.push_back(last_linear);
    } else {
      throw Error("layer " + module->name() + " has no fused form; add one in actors/fused_group.cpp");
    }
    layers_.push_back(layer);
  }
  params_.resize(static_cast<std::size_t>(params));
  padding_.resize(params_.size());
  buffers_.resize(static_cast<std::size_t>(buffers));
  param_info_.resize(params_.size());
  for (const auto& layer : layers_) {
    if (layer.param < 0) continue;
    param_info_[layer.param] = {layer.name + ".weight", layer.op == Op::Linear, false};
    if (layer.bias) param_info_[layer.param + 1] = {layer.name + ".bias", false, layer.op == Op::Linear};
  }
}

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

void FusedGroup::add(tuners::TrialId trial, const TrialSpec& spec, std::uint64_t seed,
                     const TrialCheckpoint* resume) {
  if (fusion_key(spec) != key_) throw Error("trial " + std::to_string(trial) + " cannot join fused group " + key_);
  if (contains(trial)) throw Error("trial " + std::to_string(trial) + " is already in this fused group");
  torch::NoGradGuard no_grad;
  // Everything that can fail (a checkpoint of another architecture) happens before the
  // group changes.
  auto solo = build_member_model(spec.model, seed, input_, device_);
  std::vector<std::vector<torch::Tensor>> optimizer_state;
  if (resume) {
    if (resume->optimizer != spec.optimizer.name) {
      throw InputError("checkpoint of trial " + std::to_string(resume->trial) + ": written for optimizer " +
                       resume->optimizer + ", but the trial uses " + spec.optimizer.name);
    }
    load_model_state(*solo, *resume);
    // Step 0 has no optimizer state yet; the member starts from zeros like a new one.
    if (resume->optimizer_steps > 0) {
      const auto solo_params = solo->named_parameters();
      for (const auto& slot : optimizer_slots(spec.optimizer.name)) {
        std::vector<torch::Tensor> tensors;
        for (std::size_t i = 0; i < param_info_.size(); ++i) {
          const auto& name = param_info_[i].name;
          tensors.push_back(to_member_layout(i, restore_tensor(*resume, name + "/" + slot, solo_params[name], true)));
        }
        optimizer_state.push_back(std::move(tensors));
      }
    }
  }
  graph_.reset();  // the stacked tensors a captured step works on are about to be replaced
  std::vector<torch::Tensor> member_params(params_.size()), member_buffers(buffers_.size());
  const auto children = solo->named_children();
  for (std::size_t i = 0; i < layers_.size(); ++i) {
    const auto& layer = layers_[i];
    const auto& module = children[i].value();
    if (layer.param < 0) continue;
    const auto solo_params = module->named_parameters(false);
    member_params[layer.param] = to_member_layout(layer.param, solo_params["weight"]).clone();
    if (layer.bias) member_params[layer.param + 1] = to_member_layout(layer.param + 1, solo_params["bias"]).clone();
    if (layer.op == Op::BatchNorm) {
      member_buffers[layer.buffer] = module->named_buffers(false)["running_mean"].clone();
      member_buffers[layer.buffer + 1] = module->named_buffers(false)["running_var"].clone();
    }
  }
  Member member{trial, spec, seed, resume ? resume->step : 0, {}, {}};
  for (const auto& t : member_params) member.param_shapes.push_back(t.sizes().vec());
  for (const auto& t : member_buffers) member.buffer_shapes.push_back(t.sizes().vec());
  members_.push_back(std::move(member));
  // Wider than the group: the others' tensors (and state) grow first, padded with zeros.
  fit_members();
  auto param_shapes = widest(members_, false), buffer_shapes = widest(members_, true);
  for (auto& shape : param_shapes) shape[0] = 1;  // the new member's row
  for (auto& shape : buffer_shapes) shape[0] = 1;
  for (std::size_t i = 0; i < params_.size(); ++i) {
    auto stacked = fit_to(member_params[i].unsqueeze(0), param_shapes[i]);
    params_[i] = (params_[i].defined() ? torch::cat({params_[i].detach(), stacked}) : stacked.clone())
                     .requires_grad_(true);
    member_params[i] = stacked[0];
  }
  for (std::size_t i = 0; i < buffers_.size(); ++i) {
    auto stacked = fit_to(member_buffers[i].unsqueeze(0), buffer_shapes[i]);
    buffers_[i] = buffers_[i].defined() ? torch::cat({buffers_[i], stacked}) : stacked.clone();
  }
  for (auto& slot : optimizer_state) {
    for (std::size_t i = 0; i < slot.size(); ++i) slot[i] = fit_to(slot[i], member_params[i].sizes());
  }
  optimizer_.append_member(spec.optimizer, member_params, optimizer_state, resume ? resume->optimizer_steps : 0);
  auto loss = torch::full({1}, resume ? resume->train_loss_sum : 0.0, torch::TensorOptions().device(device_));
  loss_sum_ = loss_sum_.defined() ? torch::cat({loss_sum_, loss}) : loss;
  loss_count_.push_back(resume ? resume->train_loss_count : 0);
  fit_members();  // the padding masks, now with the new member
}

std::vector<FusedGroup::Shape> FusedGroup::widest(const std::vector<Member>& members, bool buffers) {
  std::vector<Shape> out;
  for (const auto& m : members) {
    const auto& shapes = buffers ? m.buffer_shapes : m.param_shapes;
    out.resize(shapes.size());
    for (std::size_t i = 0; i < shapes.size(); ++i) {
      if (out[i].empty()) out[i].assign(shapes[i].size() + 1, 0);
      for (std::size_t d = 0; d < shapes[i].size(); ++d) out[i][d + 1] = std::max(out[i][d + 1], shapes[i][d]);
    }
  }
  return out;
}

void FusedGroup::fit_members() {
  // Stacked tensors hold the members before the last join (the new member is appended
  // after this call) or after a removal: K is the tensors' own.
  auto params = widest(members_, false), buffers = widest(members_, true);
  if (params.empty() || !params_.front().defined()) {
    for (auto& p : padding_) p = torch::Tensor();
    return;
  }
  const auto k = params_.front().size(0);
  for (auto& s : params) s[0] = k;
  for (auto& s : buffers) s[0] = k;
  torch::NoGradGuard no_grad;
  bool resized = false;
  for (std::size_t i = 0; i < params_.size(); ++i) {
    if (params_[i].sizes().equals(params[i])) continue;
    params_[i] = fit_to(params_[i].detach(), params[i]).requires_grad_(true);
    resized = true;
  }
  for (std::size_t i = 0; i < buffers_.size(); ++i) buffers_[i] = fit_to(buffers_[i], buffers[i]);
  if (resized) optimizer_.resize(params);
  for (std::size_t i = 0; i < params_.size(); ++i) {
    padding_[i] = torch::Tensor();
    if (k != static_cast<std::int64_t>(members_.size())) continue;  // a join in progress
    bool padded = false;
    for (const auto& m : members_) padded |= !(at::IntArrayRef(m.param_shapes[i]).equals(params_[i].sizes().slice(1)));
    if (!padded) continue;
    auto mask = torch::ones(params[i], torch::TensorOptions().dtype(torch::kBool));
    for (std::size_t m = 0; m < members_.size(); ++m) {
      auto own = mask[static_cast<std::int64_t>(m)];
      const auto& shape = members_[m].param_shapes[i];
      for (std::size_t d = 0; d < shape.size(); ++d) own = own.narrow(static_cast<std::int64_t>(d), 0, shape[d]);
      own.fill_(false);
    }
    padding_[i] = mask.to(device_);
  }
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
    for (auto& p : params_) p = torch::Tensor();
    for (auto& b : buffers_) b = torch::Tensor();
    for (auto& p : padding_) p = torch::Tensor();
    loss_sum_ = torch::Tensor();
    return;
  }
  torch::NoGradGuard no_grad;
  auto index = torch::tensor(keep, torch::kInt64).to(device_);
  for (auto& p : params_) p = p.detach().index_select(0, index).requires_grad_(true);
  for (auto& b : buffers_) b = b.index_select(0, index);
  loss_sum_ = loss_sum_.index_select(0, index);
  fit_members();  // shrinks to the widest remaining member
}

namespace {

// [K, ...] from K tensors; a unit of one (most trials on a CPU) takes a view, not a copy.
torch::Tensor stack_members(const std::vector<torch::Tensor>& tensors) {
  return tensors.size() == 1 ? tensors.front().unsqueeze(0) : torch::stack(tensors);
}

}  // namespace

std::vector<torch::Tensor> FusedGroup::dropout_masks(std::int64_t batch) {
  std::vector<std::vector<torch::Tensor>> per_member;
  for (const auto& m : members_) {
    std::vector<torch::Tensor> masks;
    // The same draws, in the same order, from the same seed as the member's solo forward:
    // [batch, its own width], then padded to the group's width.
    torch::manual_seed(step_seed(m.seed, m.step));
    const double p = m.spec.model.dropout;
    for (auto param : dropout_params_) {
      const auto own = m.param_shapes[static_cast<std::size_t>(param)][1];
      const auto width = params_[static_cast<std::size_t>(param)].size(2);
      auto mask = torch::empty({batch, own}, torch::TensorOptions().device(device_)).bernoulli_(1 - p).div_(1 - p);
      masks.push_back(own == width ? mask : torch::constant_pad_nd(mask, {0, width - own}, 0));
    }
    per_member.push_back(std::move(masks));
  }
  std::vector<torch::Tensor> out;
  for (std::size_t d = 0; d < dropout_params_.size(); ++d) {
    std::vector<torch::Tensor> layer;
    for (auto& masks : per_member) layer.push_back(masks[d]);
    out.push_back(stack_members(layer));  // [K, B, width]
  }
  return out;
}

torch::Tensor FusedGroup::forward(torch::Tensor x, const std::vector<torch::Tensor>& masks,
                                  bool training) {
  // x arrives as [K, B, C, H, W]. Convolutions work on [B, K*C, H, W]; linear layers on
  // [K, B, features].
  const auto k = static_cast<std::int64_t>(members_.size());
  const auto batch = x.size(1);
  for (const auto& layer : layers_) {
    switch (layer.op) {
      case Op::Linear:
        x = torch::baddbmm(params_[layer.param + 1], x, params_[layer.param]);
        break;
      case Op::Conv: {
        if (x.dim() == 5) x = x.transpose(0, 1).reshape({batch, -1, x.size(3), x.size(4)});
        const auto& w = params_[layer.param];  // [K, out, in, kh, kw]
        if (k > 1 && (!device_.is_cuda() || w.size(2) == 1)) {
          // Member by member, each convolution is bitwise what it is alone. Grouped over K
          // members, LibTorch picks another algorithm (on the CPU for any channel count, on any
          // device for one input channel, where it is depthwise) whose sums run in another
          // order. On the CPU this costs nothing: its grouped convolution is no faster.
          const auto in = w.size(2);
          std::vector<torch::Tensor> outs;
          for (std::int64_t i = 0; i < k; ++i) {
            auto bias = layer.bias ? params_[layer.param + 1][i].view({-1}) : torch::Tensor();
            outs.push_back(torch::conv2d(x.narrow(1, i * in, in), w[i], bias, 1, layer.padding));
          }
          x = torch::cat(outs, 1);  // [B, K*out, H, W]
          break;
        }
        auto bias = layer.bias ? params_[layer.param + 1].view({-1}) : torch::Tensor();
        x = torch::conv2d(x, w.view({k * w.size(1), w.size(2), w.size(3), w.size(4)}), bias, 1,
                          layer.padding, 1, k);
        break;
      }
      case Op::BatchNorm:
        x = torch::batch_norm(x, params_[layer.param].view({-1}), params_[layer.param + 1].view({-1}),
                              buffers_[layer.buffer].view({-1}), buffers_[layer.buffer + 1].view({-1}),
                              training, 0.1, 1e-5, true);
        break;
      case Op::Relu: x = torch::relu(x); break;
      case Op::Tanh: x = torch::tanh(x); break;
      case Op::Gelu: x = torch::gelu(x); break;
      case Op::Sigmoid: x = torch::sigmoid(x); break;
      case Op::Pool: x = torch::max_pool2d(x, {2, 2}); break;
      case Op::Flatten:
        x = x.dim() == 5 ? x.reshape({k, batch, -1}) : x.view({batch, k, -1}).transpose(0, 1);
        break;
      case Op::Dropout:
        if (training) x = x * masks[static_cast<std::size_t>(layer.dropout_index)];
        break;
    }
  }
  return x;  // [K, B, classes]
}

void FusedGroup::prefetch(datasets::BatchStream& stream) const {
  for (const auto& m : members_) stream.batch(m.step, m.spec.batch_size);
}

void FusedGroup::train_step(datasets::BatchStream& stream) {
  if (members_.empty()) return;
  const int batch_size = members_.front().spec.batch_size;
  // Everything that differs from step to step is decided here, on the host: which batch
  // each member reads and its dropout masks (drawn from its own seed). The device part of
  // the step sees only these tensors, so a CUDA graph of it stays right at every replay.
  std::vector<torch::Tensor> inputs, labels;
  for (const auto& m : members_) {
    auto [x, y] = stream.batch(m.step, batch_size);
    inputs.push_back(x);
    labels.push_back(y);
  }
  std::vector<torch::Tensor> step_inputs{stack_members(inputs), stack_members(labels)};
  for (auto& mask : dropout_masks(step_inputs[0].size(1))) step_inputs.push_back(std::move(mask));
  graph_.run(
      step_inputs, [this](const std::vector<torch::Tensor>& in) { device_step(in); },
      [this] {
        for (auto& p : params_) p.mutable_grad() = torch::Tensor();
      });
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
  const std::vector<torch::Tensor> masks(in.begin() + 2, in.end());
  const auto batch = x.size(1);
  for (auto& p : params_) {
    if (p.grad().defined()) p.mutable_grad().zero_();
  }
  auto logits = forward(x, masks, true);
  auto per_sample = torch::nn::functional::cross_entropy(
      logits.reshape({k * batch, -1}), y.reshape({k * batch}),
      torch::nn::functional::CrossEntropyFuncOptions().reduction(torch::kNone));
  // The sum of the members' mean losses: member k's gradient is its solo gradient.
  auto losses = per_sample.view({k, batch}).mean(1);
  losses.sum().backward();
  for (std::size_t i = 0; i < params_.size(); ++i) {
    if (padding_[i].defined()) params_[i].mutable_grad().masked_fill_(padding_[i], 0);
  }
  optimizer_.device_step(params_);
  loss_sum_ += losses.detach();
}

std::map<tuners::TrialId, Metrics> FusedGroup::evaluate(const datasets::BatchStream& stream,
                                                        const std::vector<tuners::TrialId>& which) {
  torch::NoGradGuard no_grad;
  const auto k = static_cast<std::int64_t>(members_.size());
  const auto& inputs = stream.validation_inputs();
  const auto& labels = stream.validation_labels();
  const std::int64_t n = inputs.size(0);
  auto loss = torch::zeros({k}, torch::TensorOptions().dtype(torch::kFloat64).device(device_));
  auto correct = torch::zeros({k}, torch::TensorOptions().dtype(torch::kInt64).device(device_));
  // Each member evaluates as many examples at once as it would alone: the K-fold chunk is
  // what the memory model charges a fused group.
  const std::int64_t chunk = evaluation_chunk(members_.front().spec.batch_size);
  for (std::int64_t begin = 0; begin < n; begin += chunk) {
    const auto len = std::min(chunk, n - begin);
    auto x = inputs.narrow(0, begin, len).unsqueeze(0).expand({k, len, inputs.size(1), inputs.size(2), inputs.size(3)});
    auto logits = forward(x, {}, false);  // [K, len, classes]
    auto y = labels.narrow(0, begin, len).unsqueeze(0).expand({k, len});
    auto per_sample = torch::nn::functional::cross_entropy(
        logits.reshape({k * len, -1}), y.reshape({k * len}),
        torch::nn::functional::CrossEntropyFuncOptions().reduction(torch::kNone));
    loss += per_sample.view({k, len}).sum(1).to(torch::kFloat64);
    correct += logits.argmax(2).eq(y).sum(1);
  }
  auto loss_host = loss.cpu();
  auto correct_host = correct.cpu();
  auto train_host = loss_sum_.to(torch::kFloat64).cpu();
  std::map<tuners::TrialId, Metrics> out;
  for (std::int64_t i = 0; i < k; ++i) {
    auto& member = members_[static_cast<std::size_t>(i)];
    if (std::find(which.begin(), which.end(), member.trial) == which.end()) continue;
    Metrics m;
    m["val_loss"] = loss_host[i].item<double>() / static_cast<double>(std::max<std::int64_t>(1, n));
    m["val_accuracy"] = static_cast<double>(correct_host[i].item<std::int64_t>()) /
                        static_cast<double>(std::max<std::int64_t>(1, n));
    auto& count = loss_count_[static_cast<std::size_t>(i)];
    if (count > 0) {
      m["train_loss"] = train_host[i].item<double>() / static_cast<double>(count);
      loss_sum_[i].zero_();
      count = 0;
    }
    out[member.trial] = std::move(m);
  }
  return out;
}

torch::Tensor FusedGroup::to_member_layout(std::size_t param, const torch::Tensor& solo) const {
  const auto& info = param_info_[param];
  if (info.linear_weight) return solo.t().contiguous();
  if (info.linear_bias) return solo.reshape({1, -1});
  return solo;
}

torch::Tensor FusedGroup::to_solo_layout(std::size_t param, const torch::Tensor& member) const {
  const auto& info = param_info_[param];
  if (info.linear_weight) return member.t();
  if (info.linear_bias) return member.reshape({-1});
  return member;
}

std::vector<std::pair<std::string, torch::Tensor>> FusedGroup::member_views(std::int64_t k) const {
  const auto& member = members_[static_cast<std::size_t>(k)];
  std::vector<std::pair<std::string, torch::Tensor>> out;
  for (const auto& layer : layers_) {
    if (layer.param < 0) continue;
    for (int i = 0; i < (layer.bias ? 2 : 1); ++i) {
      const auto p = static_cast<std::size_t>(layer.param + i);
      out.emplace_back(param_info_[p].name, to_solo_layout(p, own_part(params_[p].detach().select(0, k), member.param_shapes[p])));
    }
    if (layer.op == Op::BatchNorm) {
      const auto b = static_cast<std::size_t>(layer.buffer);
      out.emplace_back(layer.name + ".running_mean", own_part(buffers_[b].select(0, k), member.buffer_shapes[b]));
      out.emplace_back(layer.name + ".running_var", own_part(buffers_[b + 1].select(0, k), member.buffer_shapes[b + 1]));
      out.emplace_back(layer.name + ".num_batches_tracked", torch::tensor(member.step, torch::kInt64));
    }
  }
  return out;
}

std::vector<std::pair<std::string, torch::Tensor>> FusedGroup::member_state(tuners::TrialId trial) const {
  const auto k = index_of(trial);
  if (k < 0) throw Error("trial " + std::to_string(trial) + " is not in this fused group");
  auto out = member_views(k);
  for (auto& [name, tensor] : out) tensor = tensor.contiguous().clone();
  return out;
}

void FusedGroup::capture(tuners::TrialId trial, TrialCheckpoint& c) const {
  const auto k = index_of(trial);
  if (k < 0) throw Error("trial " + std::to_string(trial) + " is not in this fused group");
  torch::NoGradGuard no_grad;
  for (const auto& [name, tensor] : member_views(k)) c.model.push_back(to_stored(name, tensor));
  const auto& member = members_[static_cast<std::size_t>(k)];
  const auto slots = optimizer_slots(member.spec.optimizer.name);
  const auto state = optimizer_.member_state(k);
  for (std::size_t i = 0; i < param_info_.size(); ++i) {
    for (std::size_t s = 0; s < slots.size(); ++s) {
      c.optimizer_state.push_back(to_stored(param_info_[i].name + "/" + slots[s],
                                            to_solo_layout(i, own_part(state[s][i], member.param_shapes[i]))));
    }
  }
  c.optimizer = member.spec.optimizer.name;
  c.optimizer_steps = optimizer_.member_steps(k);
  c.step = member.step;
  c.train_loss_sum = loss_sum_[k].item<double>();
  c.train_loss_count = loss_count_[static_cast<std::size_t>(k)];
}

}  // namespace packtune::actors
