#pragma once
// An image classification data set held in memory as bytes: decoded once per actor and
// shared by every trial of its pack (FLEET's single data pipeline).
#include <cstdint>
#include <string>
#include <vector>

namespace packtune::datasets {

struct ImageDataset {
  std::uint32_t count = 0;
  std::uint32_t channels = 1;
  std::uint32_t height = 0;
  std::uint32_t width = 0;
  std::uint32_t classes = 10;
  std::vector<std::uint8_t> pixels;  // count x channels x height x width
  std::vector<std::uint8_t> labels;  // count

  std::size_t image_size() const { return std::size_t{channels} * height * width; }
};

struct DataSplit {
  ImageDataset train;
  ImageDataset validation;
};

struct DataOptions {
  std::string name = "fashion-mnist";
  std::string dir = "/usr/share/datasets/fashion-mnist";
  std::uint32_t train_size = 0;       // examples used for training, 0 = all that remain
  std::uint32_t validation_size = 10000;  // held out from the end of the training file
};

// The files an experiment reads, so the driver can check them before starting anything.
std::vector<std::string> data_files(const DataOptions& options);

// Loads `train-*` IDX files and splits a validation set off the end of the training file
// (the test set stays untouched for final evaluation).
DataSplit load_image_split(const DataOptions& options);

// The whole test split (`t10k-*` IDX files next to the training files): only the best trial's
// final model is evaluated on it, after selection.
ImageDataset load_test_set(const DataOptions& options);

// The training images load_image_split() gives, from the files' headers: `train_size`, or what
// the training file holds beyond the validation set, whichever is fewer.
std::uint32_t train_images(const DataOptions& options);

}  // namespace packtune::datasets
