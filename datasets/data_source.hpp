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

#include <nlohmann/json_fwd.hpp>

#include "datasets/dataset.hpp"

namespace packtune::datasets {

enum class DataFormat { Idx, Hdf5, Npy };
const char* to_string(DataFormat format);
// "idx", "hdf5" or "npy"; anything else is an InputError "WHERE: unknown format ...".
DataFormat parse_data_format(const std::string& word, const std::string& where);
// DataOptions::order_per_trial as its config word ("shared" or "per_trial"), and back; another
// word is an InputError "WHERE: unknown order ...".
const char* order_name(bool per_trial);
bool parse_data_order(const std::string& word, const std::string& where);

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
  // (at least 1, at most 10,000) otherwise.
  std::uint32_t validation_size = 0;
  // Per-channel (images) or per-feature (rows) standardisation with the training split's
  // statistics. Regression targets are never normalised: val_mse is in the targets' units.
  bool normalize = true;
  Augment augment;
  // "order": shared (every trial of the run reads the training set in one order per epoch,
  // from the experiment's seed) or per_trial (each trial its own order, from its seed, as
  // independent trainings shuffle). Shared order makes the trials' comparisons fairer and
  // decodes each batch once per pack; it also shares the order's luck among all trials
  // (docs/data.md#data-order).
  bool order_per_trial = false;
};

// All of the options as JSON (what the driver sends its actors, and the config as run's data
// block with every default spelled out), and back: an unknown format or task, a missing key or
// a wrong type is an InputError naming "data".
void to_json(nlohmann::json& j, const DataOptions& options);
void from_json(const nlohmann::json& j, DataOptions& options);

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
