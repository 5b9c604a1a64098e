#pragma once
// One data stream for a whole pack (FLEET): the training set lives on the device once, as
// stored (uint8 images stay bytes); a batch is gathered, decoded and normalised once per round
// and handed to every member that needs it. Data order never depends on packing: batch k of
// epoch e, for batch size B, is positions [kB, (k+1)B) of epoch e's permutation, drawn from
// the experiment's seed (shared order) or, with StreamOptions::order_per_trial, from the seed
// the caller passes (a trial's: its own order, alike alone or fused; each member's batch is
// then decoded for it alone). Augmented images are drawn from that seed too or, with
// Augment::per_trial off, from the experiment's seed, once for every member.
#include <cstdint>
#include <map>
#include <tuple>
#include <utility>

#include <torch/torch.h>

#include "datasets/data_source.hpp"

namespace packtune::datasets {

struct StreamOptions {
  bool normalize = true;
  Augment augment;
  bool order_per_trial = false;
};

// The stream options of a run's data block.
inline StreamOptions stream_options_of(const DataOptions& data) {
  return {data.normalize, data.augment, data.order_per_trial};
}

class BatchStream {
 public:
  BatchStream(const DataSplit& split, torch::Device device, std::uint64_t seed, StreamOptions options = {});

  // Full batches per epoch for this batch size (the last partial batch is dropped).
  std::int64_t steps_per_epoch(int batch_size) const;

  // Inputs [B, ...sample shape] float, decoded and normalised; targets [B] int64 labels or
  // [B, T] float regression targets. `draw_seed` seeds the batch's augmentation (ignored
  // without one) and, with order_per_trial, the order. Cached until the next round.
  std::pair<torch::Tensor, torch::Tensor> batch(std::int64_t step, int batch_size, std::uint64_t draw_seed = 0);

  // Another reader of the same data with its own order and batches: it shares the device
  // tensors (nothing is copied) and leaves this stream's state alone. A throughput profile
  // reads through one, so that its steps gather and decode as the pack's do.
  BatchStream reader(std::uint64_t seed) const;

  // Forget the batches of the previous round; call once per round of member steps.
  void begin_round() {
    batches_.clear();
    ++round_;
  }

  const torch::Tensor& validation_inputs() const { return val_inputs_; }
  const torch::Tensor& validation_targets() const { return val_targets_; }
  // Another set (the test split) on the device, normalised with the training set's statistics
  // as the validation set is.
  std::pair<torch::Tensor, torch::Tensor> prepare(const Dataset& set) const;

  std::int64_t train_count() const { return train_x_.size(0); }
  // One sample's shape ([C, H, W] or [D]) and what the data is for.
  std::vector<std::int64_t> sample_shape() const;
  bool images() const { return train_x_.dim() == 4; }
  Task task() const { return task_; }
  // Classes, or regression targets per sample.
  int outputs() const { return outputs_; }
  torch::Device device() const { return device_; }

  // How many batches were decoded since construction; tests use it to check sharing.
  std::int64_t batches_decoded() const { return batches_decoded_; }
  // How many epochs' orders are held; tests use it to check the cache stays small.
  std::size_t permutations_held() const { return permutations_.size(); }

 private:
  const torch::Tensor& permutation(std::uint64_t order, std::int64_t epoch);
  torch::Tensor decode(const torch::Tensor& x) const;      // to float, uint8 scaled to [0, 1]
  torch::Tensor normalise(torch::Tensor x) const;          // with the training statistics
  torch::Tensor augment(const torch::Tensor& x, std::uint64_t seed) const;

  torch::Device device_;
  std::uint64_t seed_;
  StreamOptions options_;
  Task task_;
  int outputs_;
  torch::Tensor mean_;  // per channel (images) or per feature (rows), shaped to broadcast
  torch::Tensor std_;
  torch::Tensor train_x_;        // as stored ([N, C, H, W] or [N, D]) on the device
  torch::Tensor train_targets_;  // int64 [N] or float [N, T] on the device
  torch::Tensor rows_;     // [1, H] and [1, W] positions on the host, for augment()
  torch::Tensor columns_;
  torch::Tensor val_inputs_;
  torch::Tensor val_targets_;
  struct Permutation {
    torch::Tensor positions;
    std::int64_t last_round;
  };
  std::map<std::pair<std::uint64_t, std::int64_t>, Permutation> permutations_;  // by (order, epoch)
  // By (order, epoch, batch in epoch, batch size, augmentation draw).
  std::map<std::tuple<std::uint64_t, std::int64_t, std::int64_t, int, std::uint64_t>,
           std::pair<torch::Tensor, torch::Tensor>>
      batches_;
  std::int64_t round_ = 0;
  std::int64_t batches_decoded_ = 0;
};

}  // namespace packtune::datasets
