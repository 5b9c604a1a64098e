#include <catch2/catch.hpp>

#include "../temp_dir.hpp"
#include "datasets/idx.hpp"
#include "datasets/image_dataset.hpp"
#include "packtune/error.hpp"

using namespace packtune::datasets;
using packtune::testing::TempDir;

namespace {
void write_set(const TempDir& dir, std::uint32_t n, std::uint8_t max_label = 9) {
  IdxArray images{{n, 4, 4}, {}};
  IdxArray labels{{n}, {}};
  for (std::uint32_t i = 0; i < n; ++i) {
    for (int p = 0; p < 16; ++p) images.data.push_back(static_cast<std::uint8_t>(i));
    labels.data.push_back(static_cast<std::uint8_t>(i % (max_label + 1)));
  }
  write_idx(dir.file("train-images-idx3-ubyte.gz"), images);
  write_idx(dir.file("train-labels-idx1-ubyte.gz"), labels);
}
}  // namespace

TEST_CASE("the validation split comes off the end of the training file") {
  TempDir dir;
  write_set(dir, 20);
  DataOptions options;
  options.dir = dir.path().string();
  options.validation_size = 5;
  auto split = load_image_split(options);
  CHECK(split.train.count == 15);
  CHECK(split.validation.count == 5);
  CHECK(split.train.pixels[0] == 0);
  CHECK(split.validation.pixels[0] == 15);
  CHECK(split.validation.labels[0] == 15 % 10);
  CHECK(split.train.height == 4);
}

TEST_CASE("train_size takes a slice and still holds out the validation set") {
  TempDir dir;
  write_set(dir, 20);
  DataOptions options;
  options.dir = dir.path().string();
  options.train_size = 6;
  options.validation_size = 4;
  auto split = load_image_split(options);
  CHECK(split.train.count == 6);
  CHECK(split.validation.count == 4);
  CHECK(split.validation.pixels[0] == 6);
}

TEST_CASE("bad data sets are input errors") {
  TempDir dir;
  DataOptions options;
  options.dir = dir.path().string();
  CHECK_THROWS_WITH(load_image_split(options), Catch::Contains("not found"));
  write_set(dir, 8);
  options.validation_size = 8;
  CHECK_THROWS_WITH(load_image_split(options), Catch::Contains("validation_size"));
  options.name = "imagenet";
  CHECK_THROWS_WITH(load_image_split(options), Catch::Contains("data.name"));
  write_set(dir, 12, 11);
  options = DataOptions{};
  options.dir = dir.path().string();
  options.validation_size = 2;
  CHECK_THROWS_WITH(load_image_split(options), Catch::Contains("out of range"));
}

TEST_CASE("train_images reads the training set's size from the file's header, as the split loads it") {
  TempDir dir;
  write_set(dir, 300);
  DataOptions options;
  options.dir = dir.path().string();
  options.validation_size = 100;
  for (const std::uint32_t train_size : {0u, 150u, 200u, 500u}) {
    CAPTURE(train_size);
    options.train_size = train_size;
    CHECK(train_images(options) == load_image_split(options).train.count);
  }
  options.train_size = 0;
  CHECK(train_images(options) == 200);
  CHECK(read_idx_dims(dir.file("train-images-idx3-ubyte.gz")) == std::vector<std::uint32_t>{300, 4, 4});
  options.validation_size = 300;
  CHECK_THROWS_AS(train_images(options), packtune::InputError);
}

TEST_CASE("the test split is the whole t10k pair, checked as the training files are") {
  TempDir dir;
  write_set(dir, 20);
  DataOptions options;
  options.dir = dir.path().string();
  CHECK_THROWS_WITH(load_test_set(options), Catch::Contains("t10k-images-idx3-ubyte"));
  IdxArray images{{3, 4, 4}, std::vector<std::uint8_t>(48, 7)};
  IdxArray labels{{3}, {1, 2, 3}};
  write_idx(dir.file("t10k-images-idx3-ubyte"), images);
  write_idx(dir.file("t10k-labels-idx1-ubyte"), labels);
  const auto test = load_test_set(options);
  CHECK(test.count == 3);
  CHECK(test.height == 4);
  CHECK(test.labels == std::vector<std::uint8_t>{1, 2, 3});
  write_idx(dir.file("t10k-labels-idx1-ubyte"), IdxArray{{2}, {1, 2}});
  CHECK_THROWS_WITH(load_test_set(options), Catch::Contains("counts differ"));
}
