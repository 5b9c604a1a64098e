#pragma once
// The training engine: trials of one fusion key trained as ONE model (HFTA's horizontal
// fusion). The model is the trials' layer-library model (actors/classifier.hpp, or a model
// plugin's) with every member appended: each parameter is stacked [K, ...] and every
// activation is [K, B, ...]. A trial alone is a group of one; there is no other engine.
//
// Each member reads its own batch of the shared stream at its own step, so members may join
// and leave at any step boundary. The loss is the sum of the members' mean losses, so each
// member's gradient is its solo gradient; the fused optimizer (SGD, Adam, AdamW, per-member
// hyper-parameters) steps every member at once. Members may differ in width and optimizer:
// narrower members are padded (layers/layer.hpp) and their padding's gradients are masked
// before each step, so weight decay, momentum and Adam state never touch it.
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <torch/torch.h>

#include "actors/checkpoint_file.hpp"
#include "actors/classifier.hpp"
#include "actors/cuda_step.hpp"
#include "actors/fused_optimizer.hpp"
#include "datasets/batch_stream.hpp"
#include "layers/layer.hpp"

namespace packtune::actors {

using Metrics = std::map<std::string, double>;

// The seed of the global generator right before a trial's model is built, and the seed of its
// random draws (dropout) at `step`: initialisation and masks are functions of the trial alone.
std::uint64_t init_seed(std::uint64_t trial_seed);
std::uint64_t step_seed(std::uint64_t trial_seed, std::int64_t step);

// The trial's freshly initialised model (K = 1) on `device`.
std::shared_ptr<layers::Layer> build_member_model(const spec::ModelSpec& spec, std::uint64_t trial_seed,
                                                  const spec::InputShape& input, torch::Device device);

class FusedGroup {
 public:
  // `cpu_step`: how the optimizer steps on a CPU (CpuStep::TensorForm for a memory figure that
  // stands for a GPU's).
  FusedGroup(const spec::TrialSpec& spec, const spec::InputShape& input, torch::Device device,
             CpuStep cpu_step = CpuStep::OnePass);

  const std::string& key() const { return key_; }
  int size() const { return static_cast<int>(members_.size()); }
  bool contains(tuners::TrialId trial) const;

  // A new member, initialised exactly as it would be alone, at step 0; or, with `resume`,
  // continuing from that checkpoint at its step with its optimizer state. Throws
  // InputError when the checkpoint does not fit this group's architecture or optimizer.
  // `schedule`: its learning-rate schedule's lengths in steps (PackExecutor::schedule_steps).
  void add(tuners::TrialId trial, const spec::TrialSpec& spec, std::uint64_t seed,
           const TrialCheckpoint* resume = nullptr, const spec::ScheduleSteps& schedule = {});
  void remove(tuners::TrialId trial);
  // Population-based training's exploit inside the unit: member `trial` goes on from member
  // `from`'s weights, buffers, optimizer state, step and train-loss tally, with `spec`'s
  // hyper-parameters. Rows are copied on the device; where `spec` changes a per-member value
  // of the member's own model (its dropout, or a width that was padded), the member is
  // rebuilt from `from`'s captured state instead (the checkpoint's path, on the host): the
  // same numbers either way. Throws InputError when `spec` is of another architecture or
  // optimizer than `from`.
  void exploit(tuners::TrialId trial, tuners::TrialId from, const spec::TrialSpec& spec);

  // Decodes the batches the next train_step() reads (they are cached for the round).
  void prefetch(datasets::BatchStream& stream) const;
  // One optimizer step for every member, each on its own next batch. On a GPU, after a few
  // steps with the same members, the step is replayed as one CUDA graph.
  void train_step(datasets::BatchStream& stream);
  bool graph_captured() const { return graph_.captured(); }
  // Validation metrics for every member in `which`, and each one's train_loss since its last
  // evaluation.
  std::map<tuners::TrialId, Metrics> evaluate(const datasets::BatchStream& stream,
                                              const std::vector<tuners::TrialId>& which);
  // One member's metrics on `inputs` (normalised as the stream does) and `targets`, named
  // PREFIXloss and PREFIXaccuracy (PREFIXmse and PREFIXmae for regression): the test set.
  Metrics evaluate_on(tuners::TrialId trial, const torch::Tensor& inputs, const torch::Tensor& targets,
                      const std::string& prefix);

  std::int64_t step_of(tuners::TrialId trial) const;
  // A member's parameters and buffers under its solo state-dict names, unfused, on the
  // device: what a checkpoint of that trial holds.
  std::vector<std::pair<std::string, torch::Tensor>> member_state(tuners::TrialId trial) const;
  // Host copies of a member's tensors and optimizer state, under its solo names.
  void capture(tuners::TrialId trial, TrialCheckpoint& checkpoint) const;

 private:
  struct Member {
    tuners::TrialId trial;
    spec::TrialSpec spec;
    std::uint64_t seed;
    std::int64_t step = 0;
  };

  // [K] sums over examples, on the host: the loss, and the correct answers (classification)
  // or the mean absolute errors (regression).
  struct Scores {
    torch::Tensor loss;
    torch::Tensor second;
  };
  // The members' losses per example, [K, N], from outputs [K, N, outputs] and targets
  // ([K, N] labels or [K, N, T] values).
  // `smoothing`: each member's label smoothing, [K, 1], for the training loss; undefined: none
  // (and never for evaluation, so that val_loss compares trials whatever their smoothing).
  torch::Tensor sample_losses(const torch::Tensor& out, const torch::Tensor& y,
                              const torch::Tensor& smoothing = {}) const;
  // Rebuilds the smoothing column when the members' label_smoothing changed.
  void update_smoothing();
  // Every member on `inputs`, chunk by chunk.
  Scores score(const torch::Tensor& inputs, const torch::Tensor& targets);
  void add_metrics(Metrics& m, const std::string& prefix, const Scores& s, std::int64_t k, double n) const;
  // The device's part of a step on inputs [x, y, seeds]: what a CUDA graph holds.
  void device_step(const std::vector<torch::Tensor>& inputs);
  std::int64_t index_of(tuners::TrialId trial) const;
  // The stacked parameters and their [K, ...] shapes, after the membership changed.
  void refresh_parameters();

  std::string key_;
  spec::InputShape input_;
  torch::Device device_;
  std::shared_ptr<layers::Layer> model_;    // null while the group has no member
  std::vector<layers::Layer::Stacked> params_;
  std::vector<torch::Tensor> param_tensors_;
  std::vector<Member> members_;
  FusedOptimizer optimizer_;
  torch::Tensor loss_sum_;              // [K] since each member's last evaluation
  std::vector<std::int64_t> loss_count_;
  std::vector<double> smoothing_values_;  // each member's label_smoothing, as in smoothing_
  torch::Tensor smoothing_;               // [K, 1] on the device; undefined when all are 0
  StepGraph graph_;
};

}  // namespace packtune::actors
