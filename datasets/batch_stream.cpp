#include "datasets/batch_stream.hpp"

#include <iterator>
#include <limits>

#include "datasets/array_file.hpp"
#include "packtune/error.hpp"

namespace packtune::datasets {
namespace {

// The set's arrays as tensors that borrow its memory: valid while the Dataset lives.
torch::Tensor inputs_view(const Dataset& d) {
  std::vector<std::int64_t> sizes{static_cast<std::int64_t>(d.count)};
  for (auto s : d.sample_shape) sizes.push_back(s);
  // A [N, D] row set of uint8 would be bytes, not an image: only float rows are read.
  const auto type = d.x_type == ElementType::UInt8 ? torch::kUInt8 : torch::kFloat32;
  return torch::from_blob(const_cast<std::uint8_t*>(d.x.data()), sizes, type);
}

torch::Tensor targets_view(const Dataset& d) {
  const auto n = static_cast<std::int64_t>(d.count);
  if (d.task == Task::Classification) {
    return torch::from_blob(const_cast<std::int64_t*>(d.labels.data()), {n}, torch::kInt64);
  }
  return torch::from_blob(const_cast<float*>(d.targets.data()), {n, static_cast<std::int64_t>(d.target_size)},
                          torch::kFloat32);
}

// A borrowed tensor as one the stream owns: a copy on the host, or straight onto the device
// (the training set is held once, not once on the host and again on the device).
torch::Tensor own(const torch::Tensor& view, torch::Device device) {
  return device.is_cpu() ? view.clone() : view.to(device);
}

// Statistics of a large set, summed in chunks, in double, so that the training
// set is never held as floats twice.
constexpr std::int64_t kStatisticsChunk = 4096;

}  // namespace

BatchStream::BatchStream(const DataSplit& split, torch::Device device, std::uint64_t seed, StreamOptions options)
    : device_(device), seed_(seed), options_(options), task_(split.train.task),
      outputs_(static_cast<int>(split.train.outputs())) {
  if (split.train.count == 0) throw InputError("data: the training split is empty");
  const auto train = inputs_view(split.train);
  if (options_.augment.any() && train.dim() != 4) {
    throw InputError("data.augment: crops and flips are for images; these are feature rows");
  }
  // Statistics per channel of images ([N, C, H, W]: over N, H, W) or per feature of rows
  // ([N, D]: over N), from the training split alone, once per actor.
  std::vector<std::int64_t> over{0};
  if (train.dim() == 4) over = {0, 2, 3};
  std::vector<std::int64_t> stat_shape(static_cast<std::size_t>(train.dim()), 1);
  stat_shape[1] = train.size(1);
  auto sum = torch::zeros({train.size(1)}, torch::kFloat64);
  auto squares = torch::zeros({train.size(1)}, torch::kFloat64);
  for (std::int64_t begin = 0; begin < train.size(0); begin += kStatisticsChunk) {
    const auto x = decode(train.narrow(0, begin, std::min(kStatisticsChunk, train.size(0) - begin))).to(torch::kFloat64);
    sum += x.sum(over);
    squares += x.square().sum(over);
  }
  const double per_channel = static_cast<double>(train.numel() / train.size(1));
  auto mean = sum / per_channel;
  // The unbiased estimate, as Tensor::std gives; a constant feature divides by 1, not 0.
  auto variance = (squares - sum * mean) / std::max(1.0, per_channel - 1);
  auto std = variance.clamp_min(0).sqrt();
  std = torch::where(std > 1e-12, std, torch::ones_like(std));
  mean_ = mean.to(torch::kFloat32).view(stat_shape).to(device_);
  std_ = std.to(torch::kFloat32).view(stat_shape).to(device_);

  train_x_ = own(train, device_);
  train_targets_ = own(targets_view(split.train), device_);
  if (images()) {
    rows_ = torch::arange(train_x_.size(2), torch::kInt64).unsqueeze(0);
    columns_ = torch::arange(train_x_.size(3), torch::kInt64).unsqueeze(0);
  }
  std::tie(val_inputs_, val_targets_) = prepare(split.validation);
}

BatchStream BatchStream::reader(std::uint64_t seed) const {
  BatchStream other = *this;  // tensors are handles: the copy shares their storage
  other.seed_ = seed;
  other.permutations_.clear();
  other.batches_.clear();
  other.round_ = 0;
  other.batches_decoded_ = 0;
  return other;
}

std::pair<torch::Tensor, torch::Tensor> BatchStream::prepare(const Dataset& set) const {
  // check_data refuses this on the driver, but an actor on another machine reads its own copy
  // of the files, which may differ.
  const std::vector<std::int64_t> shape(set.sample_shape.begin(), set.sample_shape.end());
  if (shape != sample_shape()) {
    throw InputError("data: a test sample has shape " + shape_text(shape) + ", a training sample " +
                     shape_text(sample_shape()));
  }
  // Owned before normalise() works in place: a float32 set would otherwise be the Dataset's memory.
  return {normalise(decode(own(inputs_view(set), device_))), own(targets_view(set), device_)};
}

std::vector<std::int64_t> BatchStream::sample_shape() const {
  auto sizes = train_x_.sizes().vec();
  sizes.erase(sizes.begin());
  return sizes;
}

std::int64_t BatchStream::steps_per_epoch(int batch_size) const {
  return std::max<std::int64_t>(1, train_count() / batch_size);
}

torch::Tensor BatchStream::decode(const torch::Tensor& x) const {
  if (x.scalar_type() == torch::kUInt8) return x.to(torch::kFloat32).div_(255.0);
  return x.to(torch::kFloat32);
}

torch::Tensor BatchStream::normalise(torch::Tensor x) const {
  if (!options_.normalize) return x;
  return x.sub_(mean_).div_(std_);
}

// Zero padding, a random crop back to the image's size and a random horizontal flip, for each
// image of the batch: drawn on the host from `seed` (the same draws on any device), applied as
// two gathers on the device.
torch::Tensor BatchStream::augment(const torch::Tensor& x, std::uint64_t seed) const {
  const auto& a = options_.augment;
  const auto b = x.size(0), c = x.size(1), h = x.size(2), w = x.size(3);
  const std::int64_t p = a.crop_padding;
  auto generator = at::detail::createCPUGenerator(seed);
  const auto cpu = torch::TensorOptions().dtype(torch::kInt64);
  auto dy = p > 0 ? torch::randint(0, 2 * p + 1, {b, 1}, generator, cpu) : torch::zeros({b, 1}, cpu);
  auto dx = p > 0 ? torch::randint(0, 2 * p + 1, {b, 1}, generator, cpu) : torch::zeros({b, 1}, cpu);
  auto flip = a.flip ? torch::randint(0, 2, {b, 1}, generator, cpu).to(torch::kBool) : torch::zeros({b, 1}, torch::kBool);
  auto rows = dy + rows_;                                                  // [B, H] in the padded image
  auto cols = dx + torch::where(flip, (w - 1) - columns_, columns_);        // [B, W]
  auto padded = p > 0 ? torch::constant_pad_nd(x, {p, p, p, p}, 0) : x;
  rows = rows.to(device_).view({b, 1, h, 1}).expand({b, c, h, padded.size(3)});
  cols = cols.to(device_).view({b, 1, 1, w}).expand({b, c, h, w});
  return padded.gather(2, rows).gather(3, cols);
}

// `order` is 0 for the shared order, else the trial's seed with the top bit set (batch()).
const torch::Tensor& BatchStream::permutation(std::uint64_t order, std::int64_t epoch) {
  const auto key = std::make_pair(order, epoch);
  if (auto it = permutations_.find(key); it != permutations_.end()) {
    it->second.last_round = round_;
    return it->second.positions;
  }
  // Keep the cache small: what no member read this round or the last is dropped, and of one
  // order only the latest epochs (shared: members rarely sit more than a few epochs apart; a
  // trial's own order has one reader, who only moves on). A dropped one is drawn again if needed.
  for (auto it = permutations_.begin(); it != permutations_.end();) {
    it = it->second.last_round + 1 < round_ ? permutations_.erase(it) : std::next(it);
  }
  const std::size_t keep = order == 0 ? 4 : 2;
  auto first = permutations_.lower_bound({order, std::numeric_limits<std::int64_t>::min()});
  const auto end = permutations_.upper_bound({order, std::numeric_limits<std::int64_t>::max()});
  for (auto n = static_cast<std::size_t>(std::distance(first, end)); n >= keep; --n) first = permutations_.erase(first);
  // The shared order's seed is as it always was; a trial's mixes its seed in (splitmix64's
  // finaliser), so that neighbouring trial seeds give unrelated orders.
  std::uint64_t base = seed_ * 1000003ULL;
  if (order != 0) {
    std::uint64_t z = order + 0x9E3779B97F4A7C15ULL + seed_;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    base = z ^ (z >> 31);
  }
  auto generator = at::detail::createCPUGenerator(base + static_cast<std::uint64_t>(epoch));
  auto perm = torch::randperm(train_count(), generator, torch::TensorOptions().dtype(torch::kInt64));
  // To a GPU from pinned memory, without waiting: the copy queues behind the step in flight.
  if (device_.is_cuda()) perm = perm.pin_memory();
  return permutations_.emplace(key, Permutation{perm.to(device_, /*non_blocking=*/true), round_})
      .first->second.positions;
}

std::pair<torch::Tensor, torch::Tensor> BatchStream::batch(std::int64_t step, int batch_size, std::uint64_t draw_seed) {
  const std::int64_t per_epoch = steps_per_epoch(batch_size);
  const std::int64_t epoch = step / per_epoch;
  const std::int64_t k = step % per_epoch;
  const bool augmented = options_.augment.any();
  // Without augmentation or a per-trial order every member reads the same batch; with shared
  // draws too.
  const std::uint64_t draw = !augmented ? 0 : options_.augment.per_trial ? draw_seed : seed_;
  const std::uint64_t order = options_.order_per_trial ? draw_seed | 1ULL << 63 : 0;
  const auto key = std::make_tuple(order, epoch, k, batch_size, draw);
  auto it = batches_.find(key);
  if (it != batches_.end()) return it->second;
  const std::int64_t size = std::min<std::int64_t>(batch_size, train_count());
  auto index = permutation(order, epoch).narrow(0, k * size, size);
  auto inputs = decode(train_x_.index_select(0, index));
  // The draw depends on the step too: a trial's crops differ from batch to batch.
  if (augmented) inputs = augment(inputs, draw * 0x9E3779B97F4A7C15ULL ^ static_cast<std::uint64_t>(step));
  inputs = normalise(std::move(inputs));
  auto targets = train_targets_.index_select(0, index);
  ++batches_decoded_;
  return batches_.emplace(key, std::make_pair(inputs, targets)).first->second;
}

}  // namespace packtune::datasets
