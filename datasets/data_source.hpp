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

#include "datasets/dataset.hpp"

namespace packtune::datasets {

enum class DataFormat { Idx, Hdf5, Npy };
const char* to_string(DataFormat format);

// Random crops (after zero padding) and horizontal flips of training images, drawn per trial
// and step from the trial's seed (batch_stream.hpp).
struct Augment {
  int crop_padding = 0;  // pixels of zeros on each side before a random crop; 0: no crop
  bool flip = false;     // mirror half the images left to right
  // Each trial draws its own crops and flips from its seed; off, every trial of the run sees
  // the same draws (from the experiment's seed), made once per pack.
  bool per_trial = true;
  bool any() const { return crop_padding > 0 || flip; }
};

struct DataOptions {
  DataFormat format = DataFormat::Idx;
  Task task = Task::Classification;
  // idx: a data set's name (fashion-mnist, mnist, idx) and the folder of its files.
  std::string name = "fashion-mnist";
  std::string dir = "/usr/share/datasets/fashion-mnist";
  // hdf5: the file and the names of its two datasets. npy: x and y are the two files.
  std::string path;
  std::string x = "x";
  std::string y = "y";
  // The test split, if any: hdf5 another file with the same dataset names; npy two files.
  std::string test_path;
  std::string test_x;
  std::string test_y;
  std::uint32_t train_size = 0;  // examples used for training, 0 = all that remain
  // Held out from the end of the training data. 0: 10,000 for idx, a tenth of the examples
  // (at most 10,000) otherwise.
  std::uint32_t validation_size = 0;
  // Per-channel (images) or per-feature (rows) standardisation with the training split's
  // statistics. Regression targets are never normalised: val_mse is in the targets' units.
  bool normalize = true;
  Augment augment;
};

// What the planner and the model builder need, from the files' headers alone.
struct DataShape {
  std::uint32_t examples = 0;               // in the training file(s), before the split
  std::vector<std::uint32_t> sample_shape;  // as Dataset::sample_shape
  ElementType x_type = ElementType::UInt8;
  std::uint32_t outputs = 0;                // classes, or regression targets per sample
};

// The files an experiment reads (for messages and for checks that they exist).
std::vector<std::string> data_files(const DataOptions& options);

// Reads headers only. Throws InputError naming the file (and dataset) for anything it
// cannot use.
DataShape data_shape(const DataOptions& options);

// The validation split's size once options.validation_size's default is resolved.
std::uint32_t validation_examples(const DataOptions& options, std::uint32_t examples);

// The training examples load_split() gives: train_size, or what the data holds beyond the
// validation split, whichever is fewer.
std::uint32_t train_examples(const DataOptions& options);

// Reads every file in full and checks it: lengths of x and y agree, labels lie in
// 0..classes-1, no NaN or Inf, a supported dtype and rank, not empty, the test split's sample
// shape equals the training one's. Throws InputError with one line naming the file and the
// dataset. The driver calls this before it starts any actor or writes anything.
void check_data(const DataOptions& options);

struct DataSplit {
  Dataset train;
  Dataset validation;
};

// The training and validation splits (what an actor loads once and shares with its pack).
DataSplit load_split(const DataOptions& options);

// The test split, or nullopt where the data has none.
std::optional<Dataset> load_test_set(const DataOptions& options);

}  // namespace packtune::datasets
