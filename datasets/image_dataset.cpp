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

struct Labelled {
  IdxArray images;
  IdxArray labels;
  std::uint32_t count = 0;
};

// The first `wanted` (0: all) images and labels of a pair of IDX files, checked to match.
Labelled read_labelled(const std::string& images_file, const std::string& labels_file, std::uint32_t wanted) {
  Labelled l{read_idx(images_file, wanted), read_idx(labels_file, wanted)};
  if (l.images.dims.size() != 3) throw InputError(images_file + ": expected 3 dimensions (N, H, W)");
  if (l.labels.dims.size() != 1) throw InputError(labels_file + ": expected 1 dimension (N)");
  if (l.images.dims[0] != l.labels.dims[0]) {
    throw InputError(images_file + " and " + labels_file + ": image and label counts differ (" +
                     std::to_string(l.images.dims[0]) + " vs " + std::to_string(l.labels.dims[0]) + ")");
  }
  for (auto label : l.labels.data) {
    if (label >= 10) throw InputError(labels_file + ": label " + std::to_string(label) + " out of range 0..9");
  }
  l.count = l.images.dims[0];
  return l;
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
  const auto [images, labels, n] = read_labelled(files[0], files[1], wanted);
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

ImageDataset load_test_set(const DataOptions& options) {
  data_files(options);  // checks the name
  const auto [images, labels, n] = read_labelled(find_file(options.dir, "t10k-images-idx3-ubyte"),
                                                 find_file(options.dir, "t10k-labels-idx1-ubyte"), 0);
  return slice(images, labels, 0, n);
}

}  // namespace packtune::datasets
