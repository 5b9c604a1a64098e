#pragma once
// One trial's model, optimizer and position in the data stream. A trial's results depend
// only on its own seed and the stream's seed, so it trains the same alone or in a pack.
#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include <torch/torch.h>

#include "actors/checkpoint_file.hpp"
#include "actors/classifier.hpp"
#include "actors/trial_spec.hpp"
#include "datasets/batch_stream.hpp"
#include "tuners/trial_config.hpp"

namespace packtune::actors {

using Metrics = std::map<std::string, double>;

// The seed of the global generator right before a trial's model is built, and before its
// forward pass at `step`: initialisation and dropout masks are functions of the trial alone.
std::uint64_t init_seed(std::uint64_t trial_seed);
std::uint64_t step_seed(std::uint64_t trial_seed, std::int64_t step);

// The trial's freshly initialised model on `device`.
torch::nn::Sequential build_member_model(const ModelSpec& spec, std::uint64_t trial_seed,
                                         const InputShape& input, torch::Device device);

class TrialRunner {
 public:
  TrialRunner(tuners::TrialId id, const TrialSpec& spec, std::uint64_t seed,
              const datasets::BatchStream& stream);

  // One optimizer step on the stream's batch for this trial's next step.
  void train_step(datasets::BatchStream& stream);
  // Decodes the batch the next train_step() reads (cached for the round).
  void prefetch(datasets::BatchStream& stream) const { stream.batch(step_, spec_.batch_size); }

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
  std::int64_t step_ = 0;
  torch::Tensor loss_sum_;  // on the device, so training never waits for a host copy
  std::int64_t loss_count_ = 0;
};

}  // namespace packtune::actors
