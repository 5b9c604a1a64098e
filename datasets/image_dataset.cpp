#include "datasets/image_dataset.hpp"

#include <filesystem>

#include "datasets/idx.hpp"
#include "packtune/error.hpp"

namespace packtune::datasets {
namespace {

std::string find_file(const std::string& dir, const std::string& stem) {
  for (const char* suffix : {".gz", ""}) {
    auto p = std::filesystem::path(dir) / (stem + suffix);
    if (std::filesystem::is_regular_file(p)) return p.string();
  }
  return (std::filesystem::path(dir) / (stem + ".gz")).string();
}

ImageDataset slice(const IdxArray& images, const IdxArray& labels, std::uint32_t begin,
                   std::uint32_t end) {
  ImageDataset d;
  d.count = end - begin;
  d.height = images.dims[1];
  d.width = images.dims[2];
  const std::size_t size = d.image_size();
  d.pixels.assign(images.data.begin() + begin * size, images.data.begin() + end * size);
  d.labels.assign(labels.data.begin() + begin, labels.data.begin() + end);
  return d;
}

}  // namespace

std::vector<std::string> data_files(const DataOptions& options) {
  if (options.name != "fashion-mnist" && options.name != "mnist" && options.name != "idx") {
    throw InputError("data.name: unknown data set \"" + options.name +
                     "\"; expected fashion-mnist, mnist or idx");
  }
  return {find_file(options.dir, "train-images-idx3-ubyte"),
          find_file(options.dir, "train-labels-idx1-ubyte")};
}

std::uint32_t train_images(const DataOptions& options) {
  const auto dims = read_idx_dims(data_files(options)[0]);
  const std::uint32_t n = dims.empty() ? 0 : dims[0];
  if (options.validation_size >= n) {
    throw InputError("data.validation_size: " + std::to_string(options.validation_size) +
                     " leaves no training examples out of " + std::to_string(n));
  }
  const std::uint32_t rest = n - options.validation_size;
  return options.train_size > 0 ? std::min(options.train_size, rest) : rest;
}

DataSplit load_image_split(const DataOptions& options) {
  const auto files = data_files(options);
  std::uint32_t wanted = 0;
  if (options.train_size > 0) wanted = options.train_size + options.validation_size;
  const auto images = read_idx(files[0], wanted);
  const auto labels = read_idx(files[1], wanted);
  if (images.dims.size() != 3) throw InputError(files[0] + ": expected 3 dimensions (N, H, W)");
  if (labels.dims.size() != 1) throw InputError(files[1] + ": expected 1 dimension (N)");
  const std::uint32_t n = std::min(images.dims[0], labels.dims[0]);
  if (images.dims[0] != labels.dims[0]) {
    throw InputError(files[0] + " and " + files[1] + ": image and label counts differ (" +
                     std::to_string(images.dims[0]) + " vs " + std::to_string(labels.dims[0]) + ")");
  }
  for (auto l : labels.data) {
    if (l >= 10) throw InputError(files[1] + ": label " + std::to_string(l) + " out of range 0..9");
  }
  if (options.validation_size >= n) {
    throw InputError("data.validation_size: " + std::to_string(options.validation_size) +
                     " leaves no training examples out of " + std::to_string(n));
  }
  const std::uint32_t train_end = n - options.validation_size;
  DataSplit split;
  split.train = slice(images, labels, 0, train_end);
  split.validation = slice(images, labels, train_end, n);
  return split;
}

}  // namespace packtune::datasets
