#pragma once
// One optimizer step for every member of a fused pack (HFTA): each parameter is stacked with
// a leading member dimension K, and each member's hyper-parameters become a [K, 1] tensor,
// so SGD or Adam/AdamW runs as a handful of whole-tensor operations for all K at once.
// The arithmetic mirrors torch::optim's SGD, Adam and AdamW (LibTorch 1.13) step by step,
// so a member's update equals its solo update.
#include <cstdint>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "actors/trial_spec.hpp"

namespace packtune::actors {

class FusedOptimizer {
 public:
  // `kind` is the optimizer every member uses: "sgd", "adam" or "adamw".
  FusedOptimizer(std::string kind, torch::Device device);

  const std::string& kind() const { return kind_; }
  int members() const { return static_cast<int>(hyper_.size()); }

  // Stacked parameters change when members join or leave; the state follows. A member
  // resumed from a checkpoint brings its state (slot by slot, one tensor per parameter,
  // shaped like `member_shapes`) and its step count; a new one starts from zeros.
  void append_member(const OptimizerSpec& spec, const std::vector<torch::Tensor>& member_shapes,
                     const std::vector<std::vector<torch::Tensor>>& state = {}, std::int64_t steps = 0);
  void keep_members(const std::vector<std::int64_t>& keep);

  // One step over `params` (each [K, ...]); members' step counts advance by one.
  void step(const std::vector<torch::Tensor>& params);

  // Member k's state tensors, slot by slot (SGD: momentum buffer; Adam: exp_avg,
  // exp_avg_sq), one per parameter, as views into the stacked state; and its step count.
  std::vector<std::vector<torch::Tensor>> member_state(std::int64_t k) const;
  std::int64_t member_steps(std::int64_t k) const { return steps_[static_cast<std::size_t>(k)]; }

 private:
  torch::Tensor column(const std::vector<double>& values) const;  // [K, 1] float32

  std::string kind_;
  torch::Device device_;
  std::vector<OptimizerSpec> hyper_;
  std::vector<std::int64_t> steps_;
  std::vector<std::vector<torch::Tensor>> slots_;  // slot -> parameter -> [K, ...]
};

}  // namespace packtune::actors
