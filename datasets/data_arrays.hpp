#pragma once
// The x and y arrays of one split of an HDF5 or NumPy data set, and what makes them a
// Dataset: the dtypes and ranks packtune takes, lengths that agree, labels in range, finite
// values. Shared by the loaders (data_source.cpp) and the driver's checks (data_checks.cpp),
// so that what the driver accepts is exactly what an actor can load.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "datasets/array_file.hpp"
#include "datasets/data_source.hpp"

namespace packtune::datasets {

// The most classes a label may ask for: a model's last layer has one output per class.
constexpr std::int64_t kMaxClasses = 100000;

struct ArrayPair {
  std::unique_ptr<ArrayReader> x;
  std::unique_ptr<ArrayReader> y;
};

// The training files (test false) or the test files, opened; the test pair of a data set
// without a test split has no readers.
ArrayPair open_pair(const DataOptions& options, bool test);

struct PairLayout {
  std::uint32_t count = 0;
  std::vector<std::uint32_t> sample_shape;
  ElementType x_type = ElementType::Float32;
  std::uint32_t target_size = 0;  // regression only
};

// The pair's dtypes, ranks and lengths, checked for `task`.
PairLayout layout_of(const ArrayPair& pair, Task task);

// The labels of rows [begin, end) as int64, each checked to lie in 0..classes-1 (classes 0:
// the training labels, which set the classes: none negative, the largest below kMaxClasses).
// `classes_from` ends the message of a label out of range.
std::vector<std::int64_t> read_labels(ArrayReader& y, std::uint64_t begin, std::uint64_t end, std::uint32_t classes,
                                      const std::string& classes_from = "");
// The largest label plus one.
std::uint32_t classes_of(const std::vector<std::int64_t>& labels);

// Rows [begin, end) as a Dataset (labels checked against `classes`), every value checked finite.
Dataset read_examples(const ArrayPair& pair, const PairLayout& layout, Task task, std::uint64_t begin,
                      std::uint64_t end, std::uint32_t classes, const std::string& classes_from = "");

// Reads every x value in pieces of a few MiB and checks it is finite, keeping none.
void scan_x(const ArrayPair& pair, const PairLayout& layout);
// Reads every target and checks it is finite (regression).
void scan_targets(const ArrayPair& pair, const PairLayout& layout);

}  // namespace packtune::datasets
