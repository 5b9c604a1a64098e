#pragma once
// One data stream for a whole pack (FLEET): the training set lives on the device once, as
// bytes; a batch is gathered, decoded and normalised once per round and handed to every
// member that needs it. Data order depends only on the experiment seed, never on packing:
// batch k of epoch e, for batch size B, is positions [kB, (k+1)B) of epoch e's permutation.
#include <cstdint>
#include <map>
#include <tuple>
#include <utility>

#include <torch/torch.h>

#include "datasets/image_dataset.hpp"

namespace packtune::datasets {

class BatchStream {
 public:
  BatchStream(const DataSplit& split, torch::Device device, std::uint64_t seed);

  // Full batches per epoch for this batch size (the last partial batch is dropped).
  std::int64_t steps_per_epoch(int batch_size) const;

  // Inputs [B, C, H, W] float, normalised; labels [B] int64. Cached until the next round.
  std::pair<torch::Tensor, torch::Tensor> batch(std::int64_t step, int batch_size);

  // Forget the batches of the previous round; call once per round of member steps.
  void begin_round() { batches_.clear(); }

  const torch::Tensor& validation_inputs() const { return val_inputs_; }
  // Another set (the test split) on the device, normalised with the training set's statistics
  // as the validation set is: inputs [N, C, H, W] float and labels [N] int64.
  std::pair<torch::Tensor, torch::Tensor> prepare(const ImageDataset& set) const;
  const torch::Tensor& validation_labels() const { return val_labels_; }

  std::int64_t train_count() const { return train_pixels_.size(0); }
  int channels() const { return static_cast<int>(train_pixels_.size(1)); }
  int height() const { return static_cast<int>(train_pixels_.size(2)); }
  int width() const { return static_cast<int>(train_pixels_.size(3)); }
  int classes() const { return classes_; }
  torch::Device device() const { return device_; }

  // How many batches were decoded since construction; tests use it to check sharing.
  std::int64_t batches_decoded() const { return batches_decoded_; }

 private:
  const torch::Tensor& permutation(std::int64_t epoch);
  torch::Tensor decode(const torch::Tensor& pixels) const;

  torch::Device device_;
  std::uint64_t seed_;
  int classes_;
  float mean_ = 0;
  float std_ = 1;
  torch::Tensor train_pixels_;  // uint8 [N, C, H, W] on the device
  torch::Tensor train_labels_;  // int64 [N] on the device
  torch::Tensor val_inputs_;
  torch::Tensor val_labels_;
  std::map<std::int64_t, torch::Tensor> permutations_;
  std::map<std::tuple<std::int64_t, std::int64_t, int>, std::pair<torch::Tensor, torch::Tensor>> batches_;
  std::int64_t batches_decoded_ = 0;
};

}  // namespace packtune::datasets
