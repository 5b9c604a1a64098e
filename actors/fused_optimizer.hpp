#pragma once
// One optimizer step for every member of a fused pack (HFTA): each parameter is stacked with
// a leading member dimension K, and each member's hyper-parameters become a [K, 1] tensor,
// so SGD, Adam and AdamW members step together as a handful of whole-tensor operations.
// The arithmetic mirrors torch::optim's SGD, Adam and AdamW (LibTorch 1.13) step by step,
// so a member's update equals its solo update.
//
// Members of different kinds share the state slots: slot 0 is SGD's momentum buffer or
// Adam's exp_avg (both "c0 * s + c1 * grad", with per-member c0, c1), slot 1 Adam's
// exp_avg_sq, held only while an Adam/AdamW member is present. A mixed group computes both
// updates over all rows and picks each member's with torch::where.
#include <cstdint>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "actors/lr_schedule.hpp"
#include "actors/member_step.hpp"
#include "actors/trial_spec.hpp"

namespace packtune::actors {

// How a group on a CPU steps: one pass over each member's rows (member_step.hpp), or in
// whole-tensor operations as on a GPU, whose temporaries a memory figure taken on the CPU for
// a GPU must count.
enum class CpuStep { OnePass, TensorForm };

class FusedOptimizer {
 public:
  explicit FusedOptimizer(torch::Device device, CpuStep cpu_step = CpuStep::OnePass);

  int members() const { return static_cast<int>(hyper_.size()); }
  const std::string& kind(std::int64_t k) const { return hyper_[static_cast<std::size_t>(k)].name; }

  // Stacked parameters change when members join or leave; the state follows. A member
  // resumed from a checkpoint brings its state (its kind's slots in optimizer_slots order,
  // one tensor per parameter, shaped like `member_shapes`, i.e. padded to the group) and its
  // step count; a new one starts from zeros. Call resize() first when the group grew.
  // `schedule`: the member's schedule lengths in steps (its spec's schedule, over budget.max).
  void append_member(const OptimizerSpec& spec, const std::vector<torch::Tensor>& member_shapes,
                     const std::vector<std::vector<torch::Tensor>>& state = {}, std::int64_t steps = 0,
                     const ScheduleSteps& schedule = {});
  void keep_members(const std::vector<std::int64_t>& keep);
  // Member `to` takes member `from`'s state and step count, and `spec`'s hyper-parameters (a
  // population-based exploit inside the pack). Both must be of one optimizer kind.
  void copy_member(std::int64_t from, std::int64_t to, const OptimizerSpec& spec);
  // The group's padded parameter shapes changed (each [K, ...]): state is cut or zero-padded.
  void resize(const std::vector<std::vector<std::int64_t>>& shapes);

  // One step over `params` (each [K, ...]); members' step counts advance by one.
  void step(const std::vector<torch::Tensor>& params) {
    schedule_step();
    count_step();
    device_step(params);
  }
  // The parts of step(), for a step replayed as a CUDA graph: device_step() only launches
  // kernels (its step count lives on the device too) and may be captured; schedule_step()
  // before it and count_step() after it run on the host at every step, replayed or not.
  // schedule_step() writes each member's scheduled rate for this step into the columns the
  // device step reads, in place (nothing when no member has a schedule).
  void schedule_step();
  void count_step();
  void device_step(const std::vector<torch::Tensor>& params);
  // Member k's rate for its next step: its lr times its schedule's factor.
  double scheduled_lr(std::int64_t k) const;

  // Member k's state tensors, in its kind's optimizer_slots order (SGD: momentum buffer;
  // Adam: exp_avg, exp_avg_sq), one per parameter, as padded views into the stacked state;
  // and its step count.
  std::vector<std::vector<torch::Tensor>> member_state(std::int64_t k) const;
  std::int64_t member_steps(std::int64_t k) const { return steps_[static_cast<std::size_t>(k)]; }

 private:
  // The one-pass step on a CPU. False: a tensor is not contiguous float32 of the stacked
  // shapes, and the tensor form steps.
  bool cpu_step(const std::vector<torch::Tensor>& params);
  // The per-member columns, rebuilt when the membership changes, never per step.
  void refresh();
  torch::Tensor column(const std::vector<double>& values, torch::Dtype dtype = torch::kFloat32) const;

  torch::Device device_;
  CpuStep cpu_step_;
  // Clips each member's gradients by its own norm (grad_clip_norm), as
  // torch.nn.utils.clip_grad_norm_ clips the member's parameters alone.
  void clip(const std::vector<torch::Tensor>& params);

  std::vector<OptimizerSpec> hyper_;
  std::vector<std::int64_t> steps_;
  std::vector<ScheduleSteps> schedules_;
  bool scheduled_ = false;  // a member's rate moves from step to step
  bool clipped_ = false;    // a member clips its gradients
  torch::Tensor clip_norm_;  // [K, 1] float32: grad_clip_norm, or infinity for none
  std::vector<double> rates_;  // each member's rate for this step (schedule_step)
  std::vector<torch::Tensor> slots_[2];  // slot -> parameter -> [K, ...]
  bool has_sgd_ = false, has_adaptive_ = false, has_l2_ = false, has_decoupled_ = false,
       has_nesterov_ = false;
  // [K, 1] float32: SGD lr; L2 weight decay (SGD, Adam); AdamW's 1 - lr * wd; slot 0's
  // c0 (momentum or beta1) and c1 (1 or 1 - beta1); slot 1's beta2 and 1 - beta2.
  torch::Tensor lr_, l2_, decay_, c0_, c1_, b2_, omb2_, nesterov_, adaptive_;
  // [K, 1] float64 for Adam's bias corrections, computed on the device as torch does on the
  // host: lr, beta1, beta2 (0 for SGD rows, so their corrections stay 1) and the step count.
  torch::Tensor lr64_, b1_64_, b2_64_, steps64_;
  // The same per member for the CPU's one pass; cpu_step() sets Adam rows' step-dependent rate
  // and bias2 before each pass.
  std::vector<MemberStep> cpu_members_;
};

}  // namespace packtune::actors
