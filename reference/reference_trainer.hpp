#pragma once
// One trial trained with LibTorch's own modules (reference/torch_classifier.hpp) and optimizers
// (torch::optim): the oracle that packtune's engine (actors/fused_group.hpp) is tested
// against, and the "plain LibTorch" of the benchmarks. Its checkpoints use the engine's names,
// so either can continue the other's.
#include <cstdint>
#include <memory>
#include <string>

#include <torch/torch.h>

#include "actors/checkpoint_file.hpp"
#include "actors/fused_group.hpp"
#include "datasets/batch_stream.hpp"
#include "reference/torch_classifier.hpp"
#include "spec/trial_spec.hpp"
#include "tuners/trial_config.hpp"

namespace packtune::reference {

using actors::Metrics;
using actors::TrialCheckpoint;
using spec::TrialSpec;

// The trial's freshly initialised reference model on `device`, seeded as the engine seeds its
// own (actors::init_seed), so both start from the same weights.
torch::nn::Sequential build_reference_model(const spec::ModelSpec& spec, std::uint64_t trial_seed,
                                            const spec::InputShape& input, torch::Device device);

class ReferenceTrainer {
 public:
  // `schedule`: the lengths of the spec's learning-rate schedule in steps (over budget.max).
  ReferenceTrainer(tuners::TrialId id, const TrialSpec& spec, std::uint64_t seed,
              const datasets::BatchStream& stream, const spec::ScheduleSteps& schedule = {});

  // One optimizer step on the stream's batch for this trial's next step.
  void train_step(datasets::BatchStream& stream);
  // Decodes the batch the next train_step() reads (cached for the round).
  void prefetch(datasets::BatchStream& stream) const { stream.batch(step_, spec_.batch_size, seed_); }

  // val_loss, val_accuracy on the stream's validation set, and train_loss: the mean
  // training loss since the previous call.
  Metrics evaluate(const datasets::BatchStream& stream);
  // PREFIXloss and PREFIXaccuracy on `inputs` (normalised as the stream does) and `labels`.
  Metrics evaluate_on(const torch::Tensor& inputs, const torch::Tensor& labels, const std::string& prefix);

  // Continues where a checkpoint of this trial left off: parameters, buffers, optimizer
  // state, step and the train_loss accumulator. Data order and dropout masks follow from the
  // step, so training on matches training without the pause. Throws InputError when the
  // checkpoint was written for another architecture or optimizer.
  void restore(const TrialCheckpoint& checkpoint);
  // Host copies of everything restore() needs; the caller adds the trial's metadata.
  void capture(TrialCheckpoint& checkpoint) const;

  tuners::TrialId id() const { return id_; }
  std::int64_t step() const { return step_; }
  const TrialSpec& spec() const { return spec_; }
  torch::nn::Sequential& model() { return model_; }

 private:
  tuners::TrialId id_;
  TrialSpec spec_;
  std::uint64_t seed_;
  torch::nn::Sequential model_;
  std::unique_ptr<torch::optim::Optimizer> optimizer_;
  spec::ScheduleSteps schedule_;
  std::int64_t step_ = 0;
  torch::Tensor loss_sum_;  // on the device, so training never waits for a host copy
  std::int64_t loss_count_ = 0;
};

}  // namespace packtune::reference
