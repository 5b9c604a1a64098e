#pragma once
// Where an experiment's data comes from (the config's "data" block and "task") and how it is
// read: IDX files (MNIST, Fashion-MNIST), one HDF5 file with an x and a y dataset, or a pair
// of NumPy .npy files. The validation split comes off the end of the training data; the test
// split (only the winner's final model sees it) is a file of its own. Plain C++, no LibTorch:
// the driver checks the data with it before any actor starts.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "datasets/data_options.hpp"
#include "datasets/dataset.hpp"

namespace packtune::datasets {

// What the planner and the model builder need, from the files' headers (and, for a
// classification task of HDF5 or NumPy files, the training labels, whose largest says how many
// classes there are).
struct DataShape {
  std::uint32_t examples = 0;               // in the training file(s), before the split
  std::vector<std::uint32_t> sample_shape;  // as Dataset::sample_shape
  ElementType x_type = ElementType::UInt8;
  std::uint32_t outputs = 0;                // classes, or regression targets per sample
};

// The files an experiment reads (for messages and for checks that they exist): for idx the
// training files, for hdf5 and npy every file the options name, test files included.
std::vector<std::string> data_files(const DataOptions& options);
// Every file a run of these options reads: data_files(), and for idx the test split's t10k-*
// files where they are (load_test_set reads them then). What --resume fingerprints.
std::vector<std::string> files_read(const DataOptions& options);

// Reads headers only. Throws InputError naming the file (and dataset) for anything it
// cannot use.
DataShape data_shape(const DataOptions& options);

// The validation split's size once options.validation_size's default is resolved.
std::uint32_t validation_examples(const DataOptions& options, std::uint32_t examples);

// The training examples load_split() gives: train_size, or what the data holds beyond the
// validation split, whichever is fewer.
std::uint32_t train_examples(const DataOptions& options);

// The bytes an actor holds of the data set (datasets::BatchStream): the training split as
// stored (uint8 or float32), the validation split as float32, and their labels (int64) or
// targets (float32). What the driver compares with the memory of the actors it starts.
std::uint64_t actor_data_bytes(const DataOptions& options, const DataShape& shape);

// Reads every file in full (in pieces of a few MiB, so the driver holds little of it) and checks it: lengths of x and y agree, labels lie in
// 0..classes-1, no NaN or Inf, a supported dtype and rank, not empty, the test split's sample
// shape and element type equal the training one's, the validation split leaves training
// examples, augmentation only for images. Throws InputError with one line naming the config
// key, the file and the dataset: `data.y: /p/d.h5 dataset "y": label 12 in row 7 outside 0..9`. The driver calls this before it starts any actor or writes anything.
void check_data(const DataOptions& options);

struct DataSplit {
  Dataset train;
  Dataset validation;
};

// The training and validation splits (what an actor loads once and shares with its pack). With
// train_size, the first train_size examples train and the validation split follows them. Memory
// that runs out while reading is an InputError saying so, not a crash.
DataSplit load_split(const DataOptions& options);

// The test split, or nullopt where the data has none (idx: no t10k-* files beside the training
// files; hdf5: no test_path; npy: no test_x). Its labels are checked against the training
// split's classes.
std::optional<Dataset> load_test_set(const DataOptions& options);

}  // namespace packtune::datasets
