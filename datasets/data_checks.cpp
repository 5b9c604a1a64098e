// check_data: everything an actor would find wrong with a data set, found by the driver before
// it starts one, each as one line naming the config key, the file and the dataset.
#include <filesystem>

#include "datasets/data_arrays.hpp"
#include "datasets/data_source.hpp"
#include "packtune/error.hpp"

namespace packtune::datasets {
namespace {

const char* type_text(ElementType type) { return type == ElementType::UInt8 ? "uint8" : "float32"; }

void check_augment(const DataOptions& options, const ArrayInfo& x, const std::vector<std::uint32_t>& sample_shape) {
  if (options.augment.any() && sample_shape.size() != 3) {
    throw InputError("data.augment: crops and flips are for images, but " + x.where.substr(x.where.find(": ") + 2) +
                     " holds feature rows of shape " + shape_text(sample_shape));
  }
}

// The test split against the training split: the same kind of sample, labels among its classes.
void check_test(const DataOptions& options, const PairLayout& train, std::uint32_t classes) {
  const auto test = open_pair(options, true);
  if (!test.x) return;
  const auto layout = layout_of(test, options.task);
  const auto& x = test.x->info();
  if (layout.sample_shape != train.sample_shape) {
    throw InputError(x.where + ": sample shape " + shape_text(layout.sample_shape) + " differs from the training "
                     "split's " + shape_text(train.sample_shape));
  }
  if (layout.x_type != train.x_type) {
    throw InputError(x.where + ": dtype " + type_text(layout.x_type) + " differs from the training split's " +
                     type_text(train.x_type));
  }
  if (layout.target_size != train.target_size) {
    throw InputError(test.y->info().where + ": " + std::to_string(layout.target_size) +
                     " targets per sample, the training split has " + std::to_string(train.target_size));
  }
  if (options.task == Task::Classification) {
    read_labels(*test.y, 0, layout.count, classes, " (the training split's classes)");
  } else {
    scan_targets(test, layout);
  }
  scan_x(test, layout);
}

}  // namespace

void check_data(const DataOptions& options) {
  if (options.format == DataFormat::Idx) {
    // IDX files are Fashion-MNIST's size: loading them is the check (counts, labels, shapes).
    auto all = options;
    all.train_size = 0;
    load_split(all);
    load_test_set(all);
    return;
  }
  const auto train = open_pair(options, false);
  const auto layout = layout_of(train, options.task);
  const auto validation = validation_examples(options, layout.count);
  if (validation >= layout.count) {
    throw InputError("data.validation_size: " + std::to_string(validation) + " leaves no training examples out of " +
                     std::to_string(layout.count) + " in " + train.x->info().where.substr(8));
  }
  check_augment(options, train.x->info(), layout.sample_shape);
  std::uint32_t classes = 0;
  if (options.task == Task::Classification) {
    classes = classes_of(read_labels(*train.y, 0, layout.count, 0));
  } else {
    scan_targets(train, layout);
  }
  scan_x(train, layout);
  check_test(options, layout, classes);
}

}  // namespace packtune::datasets
