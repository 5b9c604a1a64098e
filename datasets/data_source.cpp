// The loaders of data_source.hpp: IDX files as Fashion-MNIST ships them, and HDF5 or NumPy
// pairs through data_arrays.hpp. The checks of a whole data set are in data_checks.cpp.
#include "datasets/data_source.hpp"

#include <algorithm>
#include <filesystem>
#include <new>
#include <utility>

#include "datasets/data_arrays.hpp"
#include "datasets/idx.hpp"
#include "packtune/error.hpp"

namespace packtune::datasets {
namespace {

// IDX data sets have ten classes and, unless told otherwise, hold out 10,000 examples.
constexpr std::uint32_t kIdxClasses = 10;
constexpr std::uint32_t kDefaultValidation = 10000;

std::string find_file(const std::string& dir, const std::string& stem) {
  for (const char* suffix : {".gz", ""}) {
    auto p = std::filesystem::path(dir) / (stem + suffix);
    if (std::filesystem::is_regular_file(p)) return p.string();
  }
  return (std::filesystem::path(dir) / (stem + ".gz")).string();
}

void check_idx_name(const DataOptions& options) {
  if (options.name != "fashion-mnist" && options.name != "mnist" && options.name != "idx") {
    throw InputError("data.name: unknown data set \"" + options.name + "\"; expected fashion-mnist, mnist or idx");
  }
}

// The first `wanted` (0: all) images and labels of a pair of IDX files, checked to match, as a
// Dataset of one-channel images.
Dataset read_idx_pair(const std::string& images_file, const std::string& labels_file, std::uint32_t wanted) {
  auto images = read_idx(images_file, wanted);
  const auto labels = read_idx(labels_file, wanted);
  if (images.dims.size() != 3) throw InputError(images_file + ": expected 3 dimensions (N, H, W)");
  if (labels.dims.size() != 1) throw InputError(labels_file + ": expected 1 dimension (N)");
  if (images.dims[0] != labels.dims[0]) {
    throw InputError(images_file + " and " + labels_file + ": image and label counts differ (" +
                     std::to_string(images.dims[0]) + " vs " + std::to_string(labels.dims[0]) + ")");
  }
  Dataset d;
  d.count = images.dims[0];
  d.sample_shape = {1, images.dims[1], images.dims[2]};
  d.x_type = ElementType::UInt8;
  d.x = std::move(images.data);
  d.classes = kIdxClasses;
  d.labels.reserve(labels.data.size());
  for (std::size_t i = 0; i < labels.data.size(); ++i) {
    if (labels.data[i] >= kIdxClasses) {
      throw InputError(labels_file + ": label " + std::to_string(labels.data[i]) + " in row " + std::to_string(i) +
                       " outside 0.." + std::to_string(kIdxClasses - 1));
    }
    d.labels.push_back(labels.data[i]);
  }
  return d;
}

// The examples a load reads from a training file of `examples`: train_size plus the validation
// split, or all; and the validation split's size. Throws where no training example is left.
std::pair<std::uint32_t, std::uint32_t> used_examples(const DataOptions& options, std::uint32_t examples) {
  const auto validation = validation_examples(options, examples);
  if (validation >= examples) {
    throw InputError("data.validation_size: " + std::to_string(validation) + " leaves no training examples out of " +
                     std::to_string(examples));
  }
  const std::uint64_t wanted = options.train_size > 0 ? std::uint64_t{options.train_size} + validation : examples;
  return {static_cast<std::uint32_t>(std::min<std::uint64_t>(wanted, examples)), validation};
}

// The last `validation` examples are copied out; the training split keeps the rest in place, so
// that a 47 MB image set is not copied whole. Its vector keeps the validation rows' capacity: an
// actor holds the split only until its batch stream has copied it.
DataSplit split_of(Dataset all, std::uint32_t validation) {
  DataSplit split;
  split.validation = all.slice(all.count - validation, all.count);
  const std::uint32_t train = all.count - validation;
  all.x.resize(std::size_t{train} * all.sample_size() * all.element_bytes());
  if (!all.labels.empty()) all.labels.resize(train);
  if (!all.targets.empty()) all.targets.resize(std::size_t{train} * all.target_size);
  all.count = train;
  split.train = std::move(all);
  return split;
}

// The classes of an HDF5 or NumPy training pair: its largest label plus one.
std::uint32_t training_classes(const ArrayPair& train, const PairLayout& layout) {
  return classes_of(read_labels(*train.y, 0, layout.count, 0));
}

template <class Load>
auto out_of_memory_guard(const DataOptions& options, Load load) {
  try {
    return load();
  } catch (const std::bad_alloc&) {
    const auto files = data_files(options);
    throw InputError("data: " + (files.empty() ? std::string("the data set") : files.front()) +
                     ": the data set does not fit this actor's memory; use data.train_size, fewer actors per "
                     "machine, or a machine with more memory");
  }
}

}  // namespace

std::vector<std::string> data_files(const DataOptions& options) {
  switch (options.format) {
    case DataFormat::Idx:
      check_idx_name(options);
      return {find_file(options.dir, "train-images-idx3-ubyte"), find_file(options.dir, "train-labels-idx1-ubyte")};
    case DataFormat::Hdf5:
      return options.test_path.empty() ? std::vector<std::string>{options.path}
                                       : std::vector<std::string>{options.path, options.test_path};
    case DataFormat::Npy:
      return options.test_x.empty() ? std::vector<std::string>{options.x, options.y}
                                    : std::vector<std::string>{options.x, options.y, options.test_x, options.test_y};
  }
  return {};
}

std::vector<std::string> files_read(const DataOptions& options) {
  auto files = data_files(options);
  if (options.format == DataFormat::Idx) {
    for (const char* stem : {"t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"}) {
      auto test = find_file(options.dir, stem);
      if (std::filesystem::is_regular_file(test)) files.push_back(std::move(test));
    }
  }
  return files;
}

DataShape data_shape(const DataOptions& options) {
  DataShape shape;
  if (options.format == DataFormat::Idx) {
    const auto dims = read_idx_dims(data_files(options)[0]);
    if (dims.size() != 3) throw InputError(data_files(options)[0] + ": expected 3 dimensions (N, H, W)");
    shape.examples = dims[0];
    shape.sample_shape = {1, dims[1], dims[2]};
    shape.x_type = ElementType::UInt8;
    shape.outputs = kIdxClasses;
    return shape;
  }
  const auto train = open_pair(options, false);
  const auto layout = layout_of(train, options.task);
  shape.examples = layout.count;
  shape.sample_shape = layout.sample_shape;
  shape.x_type = layout.x_type;
  shape.outputs = options.task == Task::Classification ? training_classes(train, layout) : layout.target_size;
  return shape;
}

std::uint32_t validation_examples(const DataOptions& options, std::uint32_t examples) {
  if (options.validation_size > 0) return options.validation_size;
  if (options.format == DataFormat::Idx) return kDefaultValidation;
  return std::max<std::uint32_t>(1, std::min(kDefaultValidation, examples / 10));
}

std::uint32_t train_examples(const DataOptions& options) {
  const auto [used, validation] = used_examples(options, data_shape(options).examples);
  return used - validation;
}

std::uint64_t actor_data_bytes(const DataOptions& options, const DataShape& shape) {
  const auto [used, validation] = used_examples(options, shape.examples);
  std::uint64_t sample = 1;
  for (auto d : shape.sample_shape) sample *= d;
  const std::uint64_t element = shape.x_type == ElementType::UInt8 ? 1 : 4;
  const std::uint64_t per_label = options.task == Task::Classification ? 8 : 4 * std::uint64_t{shape.outputs};
  return std::uint64_t{used - validation} * sample * element + std::uint64_t{validation} * sample * 4 +
         std::uint64_t{used} * per_label;
}

DataSplit load_split(const DataOptions& options) {
  return out_of_memory_guard(options, [&] {
    if (options.format == DataFormat::Idx) {
      const auto files = data_files(options);
      std::uint32_t wanted = 0;
      if (options.train_size > 0) wanted = options.train_size + validation_examples(options, 0);
      auto all = read_idx_pair(files[0], files[1], wanted);
      const auto validation = validation_examples(options, all.count);
      if (validation >= all.count) used_examples(options, all.count);  // throws: no training examples
      return split_of(std::move(all), validation);
    }
    const auto train = open_pair(options, false);
    const auto layout = layout_of(train, options.task);
    const auto [used, validation] = used_examples(options, layout.count);
    const std::uint32_t classes = options.task == Task::Classification ? training_classes(train, layout) : 0;
    return split_of(read_examples(train, layout, options.task, 0, used, classes), validation);
  });
}

std::optional<Dataset> load_test_set(const DataOptions& options) {
  return out_of_memory_guard(options, [&]() -> std::optional<Dataset> {
    if (options.format == DataFormat::Idx) {
      check_idx_name(options);
      const auto images = find_file(options.dir, "t10k-images-idx3-ubyte");
      if (!std::filesystem::is_regular_file(images)) return std::nullopt;
      return read_idx_pair(images, find_file(options.dir, "t10k-labels-idx1-ubyte"), 0);
    }
    const auto test = open_pair(options, true);
    if (!test.x) return std::nullopt;
    const auto layout = layout_of(test, options.task);
    std::uint32_t classes = 0;
    if (options.task == Task::Classification) {
      const auto train = open_pair(options, false);
      classes = training_classes(train, layout_of(train, options.task));
    }
    return read_examples(test, layout, options.task, 0, layout.count, classes, " (the training split's classes)");
  });
}

}  // namespace packtune::datasets
