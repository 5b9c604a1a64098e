#pragma once
// One optimizer step for every member of a fused pack (HFTA): each parameter is stacked with
// a leading member dimension K, and each member's hyper-parameters become a [K, 1] tensor,
// so members step together as a handful of whole-tensor operations. Each optimizer's
// arithmetic (actors/optimizers/, one row each in spec/optimizers.def) mirrors torch::optim's
// (LibTorch 1.13) step by step, so a member's update equals its solo update.
//
// Each optimizer present keeps its own state slots over all K rows (actors/optimizer_step.hpp);
// a unit of several optimizers computes each one's update over all rows and picks each member's
// with torch::where. What every member shares is here: weight decay (joined to the gradient or
// decoupled, as its optimizer's row says), the rates of its schedule, gradient clipping, and the
// step counts.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "actors/optimizer_step.hpp"
#include "spec/lr_schedule.hpp"
#include "spec/trial_spec.hpp"

namespace packtune::actors {

// How a group on a CPU steps: one pass over each member's rows (OptimizerStep::rows), or in
// whole-tensor operations as on a GPU, whose temporaries a memory figure taken on the CPU for
// a GPU must count.
enum class CpuStep { OnePass, TensorForm };

class FusedOptimizer {
 public:
  explicit FusedOptimizer(torch::Device device, CpuStep cpu_step = CpuStep::OnePass);

  int members() const { return static_cast<int>(hyper_.size()); }
  const std::string& kind(std::int64_t k) const { return hyper_[static_cast<std::size_t>(k)].name; }

  // Stacked parameters change when members join or leave; the state follows. A member
  // resumed from a checkpoint brings its state (its optimizer's slots in the table's order,
  // one tensor per parameter, shaped like `member_shapes`, i.e. padded to the group) and its
  // step count; a new one starts from zeros. Call resize() first when the group grew.
  // `schedule`: the member's schedule lengths in steps (its spec's schedule, over budget.max).
  void append_member(const spec::OptimizerSpec& spec, const std::vector<torch::Tensor>& member_shapes,
                     const std::vector<std::vector<torch::Tensor>>& state = {}, std::int64_t steps = 0,
                     const spec::ScheduleSteps& schedule = {});
  void keep_members(const std::vector<std::int64_t>& keep);
  // Member `to` takes member `from`'s state and step count, and `spec`'s hyper-parameters (a
  // population-based exploit inside the pack). Both must be of one optimizer kind.
  void copy_member(std::int64_t from, std::int64_t to, const spec::OptimizerSpec& spec);
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

  // Member k's state tensors, in its optimizer's slot order (spec/optimizers.def), one per
  // parameter, as padded views into the stacked state; and its step count.
  std::vector<std::vector<torch::Tensor>> member_state(std::int64_t k) const;
  std::int64_t member_steps(std::int64_t k) const { return steps_[static_cast<std::size_t>(k)]; }

 private:
  // An optimizer with members in the unit: its step, and its state over all K rows.
  struct Present {
    spec::OptimizerKind kind;
    std::unique_ptr<OptimizerStep> step;
    std::vector<std::vector<torch::Tensor>> slots;  // slot -> parameter -> [K, ...]
    torch::Tensor mask;                              // [K, 1] bool: its members' rows
  };
  // The optimizer `kind`'s entry, made (with zero state for the rows there) when it has none.
  Present& present(spec::OptimizerKind kind, const std::vector<torch::Tensor>& member_shapes);
  Present& owner(std::int64_t k) { return present_[owner_[static_cast<std::size_t>(k)]]; }
  const Present& owner(std::int64_t k) const { return present_[owner_[static_cast<std::size_t>(k)]]; }

  // The one-pass step on a CPU. False: a tensor is not contiguous float32 of the stacked
  // shapes, and the tensor form steps.
  bool cpu_step(const std::vector<torch::Tensor>& params);
  // The per-member columns, rebuilt when the membership changes, never per step.
  void refresh();
  torch::Tensor column(const std::vector<double>& values, torch::Dtype dtype = torch::kFloat32) const;
  // Member m's weight factor before an update at `rate`: 1 - rate * wd when its optimizer's
  // decay is decoupled, else 1.
  double decay_factor(std::size_t m, double rate) const;

  torch::Device device_;
  CpuStep cpu_step_;
  // Clips each member's gradients by its own norm (grad_clip_norm), as
  // torch.nn.utils.clip_grad_norm_ clips the member's parameters alone.
  void clip(const std::vector<torch::Tensor>& params);

  std::vector<spec::OptimizerSpec> hyper_;
  std::vector<std::int64_t> steps_;
  std::vector<spec::ScheduleSteps> schedules_;
  std::vector<Present> present_;    // in spec/optimizers.def's order
  std::vector<std::size_t> owner_;  // member -> its optimizer's index in present_
  bool scheduled_ = false;  // a member's rate moves from step to step
  bool clipped_ = false;    // a member clips its gradients
  torch::Tensor clip_norm_;  // [K, 1] float32: grad_clip_norm, or infinity for none
  std::vector<double> rates_;  // each member's rate at this step (its base rate when none is scheduled)
  std::vector<bool> decoupled_;  // each member's optimizer decouples its weight decay
  bool has_l2_ = false, has_decoupled_ = false;
  // [K, 1]: the rates (float32 and float64), L2 weight decay (0 for a decoupled optimizer's
  // members), the decoupled decay factor (1 for the others), the step counts (float64).
  StepColumns columns_;
  torch::Tensor l2_, decay_;
  // Where schedule_step() writes a step's rates and decay factors on the host: the columns
  // themselves on a CPU, copies on the host for a GPU's.
  struct HostColumns {
    torch::Tensor lr, lr64, decay;
  } host_;
  // The same per member for the CPU's one pass.
  std::vector<MemberRate> cpu_rates_;
};

}  // namespace packtune::actors
