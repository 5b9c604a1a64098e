#include "datasets/batch_stream.hpp"

#include "packtune/error.hpp"

namespace packtune::datasets {
namespace {

torch::Tensor pixels_tensor(const ImageDataset& d) {
  auto t = torch::from_blob(const_cast<std::uint8_t*>(d.pixels.data()),
                            {static_cast<std::int64_t>(d.count), d.channels, d.height, d.width},
                            torch::kUInt8);
  return t.clone();
}

torch::Tensor labels_tensor(const ImageDataset& d) {
  return torch::from_blob(const_cast<std::uint8_t*>(d.labels.data()),
                          {static_cast<std::int64_t>(d.count)}, torch::kUInt8)
      .to(torch::kInt64);
}

}  // namespace

BatchStream::BatchStream(const DataSplit& split, torch::Device device, std::uint64_t seed)
    : device_(device), seed_(seed), classes_(static_cast<int>(split.train.classes)) {
  if (split.train.count == 0) throw InputError("data: the training split is empty");
  auto train = pixels_tensor(split.train);
  // Normalise with the training set's own statistics, computed once per actor.
  auto as_float = train.to(torch::kFloat32).div_(255.0);
  mean_ = as_float.mean().item<float>();
  std_ = as_float.std().item<float>();
  train_pixels_ = train.to(device_);
  train_labels_ = labels_tensor(split.train).to(device_);
  val_inputs_ = decode(pixels_tensor(split.validation).to(device_));
  val_labels_ = labels_tensor(split.validation).to(device_);
}

std::pair<torch::Tensor, torch::Tensor> BatchStream::prepare(const ImageDataset& set) const {
  if (set.height != static_cast<std::uint32_t>(height()) || set.width != static_cast<std::uint32_t>(width())) {
    throw InputError("data: the test images are " + std::to_string(set.height) + "x" + std::to_string(set.width) +
                     ", the training images " + std::to_string(height()) + "x" + std::to_string(width()));
  }
  return {decode(pixels_tensor(set).to(device_)), labels_tensor(set).to(device_)};
}

std::int64_t BatchStream::steps_per_epoch(int batch_size) const {
  return std::max<std::int64_t>(1, train_count() / batch_size);
}

torch::Tensor BatchStream::decode(const torch::Tensor& pixels) const {
  return pixels.to(torch::kFloat32).div_(255.0).sub_(mean_).div_(std_);
}

const torch::Tensor& BatchStream::permutation(std::int64_t epoch) {
  auto it = permutations_.find(epoch);
  if (it != permutations_.end()) return it->second;
  // Members rarely sit more than a few epochs apart; keep the cache small.
  while (permutations_.size() >= 4) permutations_.erase(permutations_.begin());
  auto generator = at::detail::createCPUGenerator(seed_ * 1000003ULL + static_cast<std::uint64_t>(epoch));
  auto perm = torch::randperm(train_count(), generator, torch::TensorOptions().dtype(torch::kInt64));
  // To a GPU from pinned memory, without waiting: the copy queues behind the step in flight.
  if (device_.is_cuda()) perm = perm.pin_memory();
  return permutations_.emplace(epoch, perm.to(device_, /*non_blocking=*/true)).first->second;
}

std::pair<torch::Tensor, torch::Tensor> BatchStream::batch(std::int64_t step, int batch_size) {
  const std::int64_t per_epoch = steps_per_epoch(batch_size);
  const std::int64_t epoch = step / per_epoch;
  const std::int64_t k = step % per_epoch;
  const auto key = std::make_tuple(epoch, k, batch_size);
  auto it = batches_.find(key);
  if (it != batches_.end()) return it->second;
  const std::int64_t size = std::min<std::int64_t>(batch_size, train_count());
  auto index = permutation(epoch).narrow(0, k * size, size);
  auto inputs = decode(train_pixels_.index_select(0, index));
  auto labels = train_labels_.index_select(0, index);
  ++batches_decoded_;
  return batches_.emplace(key, std::make_pair(inputs, labels)).first->second;
}

}  // namespace packtune::datasets
