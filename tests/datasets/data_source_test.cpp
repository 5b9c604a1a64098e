#include <catch2/catch.hpp>

#include <cstring>

#include <nlohmann/json.hpp>

#include "../temp_dir.hpp"
#include "data_files.hpp"
#include "datasets/data_source.hpp"
#include "datasets/idx.hpp"
#include "packtune/error.hpp"

using namespace packtune::datasets;
using namespace packtune::testing;

namespace {

void write_idx_set(const TempDir& dir, std::uint32_t n, std::uint8_t max_label = 9) {
  IdxArray images{{n, 4, 4}, {}};
  IdxArray labels{{n}, {}};
  for (std::uint32_t i = 0; i < n; ++i) {
    for (int p = 0; p < 16; ++p) images.data.push_back(static_cast<std::uint8_t>(i));
    labels.data.push_back(static_cast<std::uint8_t>(i % (max_label + 1)));
  }
  write_idx(dir.file("train-images-idx3-ubyte.gz"), images);
  write_idx(dir.file("train-labels-idx1-ubyte.gz"), labels);
}

DataOptions idx_options(const TempDir& dir) {
  DataOptions options;
  options.dir = dir.path().string();
  return options;
}

float x_at(const Dataset& d, std::size_t i) {
  float v;
  std::memcpy(&v, d.x.data() + i * sizeof(float), sizeof v);
  return v;
}

}  // namespace

TEST_CASE("idx: the validation split comes off the end of the training file, images of one channel") {
  TempDir dir;
  write_idx_set(dir, 20);
  auto options = idx_options(dir);
  options.validation_size = 5;
  const auto split = load_split(options);
  CHECK(split.train.count == 15);
  CHECK(split.validation.count == 5);
  CHECK(split.train.sample_shape == std::vector<std::uint32_t>{1, 4, 4});
  CHECK(split.train.x_type == ElementType::UInt8);
  CHECK(split.train.classes == 10);
  CHECK(split.train.x[0] == 0);
  CHECK(split.validation.x[0] == 15);
  CHECK(split.validation.labels[0] == 15 % 10);
}

TEST_CASE("idx: train_size takes a slice and still holds out the validation set after it") {
  TempDir dir;
  write_idx_set(dir, 20);
  auto options = idx_options(dir);
  options.train_size = 6;
  options.validation_size = 4;
  const auto split = load_split(options);
  CHECK(split.train.count == 6);
  CHECK(split.validation.count == 4);
  CHECK(split.validation.x[0] == 6);
}

TEST_CASE("idx: bad data sets are input errors") {
  TempDir dir;
  auto options = idx_options(dir);
  CHECK_THROWS_WITH(load_split(options), Catch::Contains("not found"));
  write_idx_set(dir, 8);
  options.validation_size = 8;
  CHECK_THROWS_WITH(load_split(options), Catch::Contains("data.validation_size: 8 leaves no training examples"));
  options.name = "imagenet";
  CHECK_THROWS_WITH(load_split(options), Catch::Contains("data.name"));
  write_idx_set(dir, 12, 11);
  options = idx_options(dir);
  options.validation_size = 2;
  CHECK_THROWS_WITH(load_split(options), Catch::Contains("label 10 in row 10 outside 0..9"));
}

TEST_CASE("idx: train_examples reads the training size from the header, as the split loads it") {
  TempDir dir;
  write_idx_set(dir, 300);
  auto options = idx_options(dir);
  options.validation_size = 100;
  for (const std::uint32_t train_size : {0u, 150u, 200u, 500u}) {
    CAPTURE(train_size);
    options.train_size = train_size;
    CHECK(train_examples(options) == load_split(options).train.count);
  }
  options.train_size = 0;
  CHECK(train_examples(options) == 200);
  options.validation_size = 300;
  CHECK_THROWS_AS(train_examples(options), packtune::InputError);
  options.validation_size = 0;  // idx's default: 10,000, more than the file holds
  CHECK_THROWS_WITH(train_examples(options), Catch::Contains("data.validation_size: 10000"));
}

TEST_CASE("idx: the test split is the whole t10k pair, or none without one") {
  TempDir dir;
  write_idx_set(dir, 20);
  const auto options = idx_options(dir);
  CHECK_FALSE(load_test_set(options).has_value());
  write_idx(dir.file("t10k-images-idx3-ubyte"), IdxArray{{3, 4, 4}, std::vector<std::uint8_t>(48, 7)});
  write_idx(dir.file("t10k-labels-idx1-ubyte"), IdxArray{{3}, {1, 2, 3}});
  const auto test = load_test_set(options);
  REQUIRE(test.has_value());
  CHECK(test->count == 3);
  CHECK(test->sample_shape == std::vector<std::uint32_t>{1, 4, 4});
  CHECK(test->labels == std::vector<std::int64_t>{1, 2, 3});
  write_idx(dir.file("t10k-labels-idx1-ubyte"), IdxArray{{2}, {1, 2}});
  CHECK_THROWS_WITH(load_test_set(options), Catch::Contains("counts differ"));
}

TEST_CASE("hdf5: images of a file with a test file, classes from the largest training label") {
  TempDir dir;
  std::vector<std::uint8_t> pixels(40 * 3 * 2 * 2);
  for (std::size_t i = 0; i < pixels.size(); ++i) pixels[i] = static_cast<std::uint8_t>(i / 12);
  write_h5(dir.file("d.h5"), "images", H5T_STD_U8LE, H5T_NATIVE_UINT8, {40, 3, 2, 2}, pixels);
  write_h5(dir.file("d.h5"), "classes", H5T_STD_I32LE, H5T_NATIVE_INT64, {40}, labels(40, 7));
  write_h5(dir.file("t.h5"), "images", H5T_STD_U8LE, H5T_NATIVE_UINT8, {5, 3, 2, 2}, std::vector<std::uint8_t>(60, 9));
  write_h5(dir.file("t.h5"), "classes", H5T_STD_U8LE, H5T_NATIVE_INT64, {5}, labels(5, 5));
  DataOptions options;
  options.format = DataFormat::Hdf5;
  options.path = dir.file("d.h5");
  options.test_path = dir.file("t.h5");
  options.x = "images";
  options.y = "classes";
  const auto shape = data_shape(options);
  CHECK(shape.examples == 40);
  CHECK(shape.sample_shape == std::vector<std::uint32_t>{3, 2, 2});
  CHECK(shape.x_type == ElementType::UInt8);
  CHECK(shape.outputs == 7);
  CHECK(validation_examples(options, 40) == 4);  // a tenth
  CHECK(train_examples(options) == 36);
  const auto split = load_split(options);
  CHECK(split.train.count == 36);
  CHECK(split.validation.count == 4);
  CHECK(split.validation.x[0] == 36);
  CHECK(split.validation.labels == std::vector<std::int64_t>{1, 2, 3, 4});
  CHECK(split.train.classes == 7);
  const auto test = load_test_set(options);
  REQUIRE(test.has_value());
  CHECK(test->count == 5);
  CHECK(test->classes == 7);
  CHECK(actor_data_bytes(options, shape) == 36 * 12 + 4 * 12 * 4 + 40 * 8);
}

TEST_CASE("npy: feature rows for regression, targets of shape [N] and [N, T]") {
  TempDir dir;
  write_npy(dir.file("x.npy"), "<f4", {30, 4}, rows(30, 4));
  DataOptions options;
  options.format = DataFormat::Npy;
  options.task = Task::Regression;
  options.x = dir.file("x.npy");
  options.y = dir.file("y.npy");
  options.train_size = 10;
  options.validation_size = 5;
  write_npy(dir.file("y.npy"), "<f4", {30}, rows(30, 1));
  auto split = load_split(options);
  CHECK(split.train.count == 10);
  CHECK(split.train.sample_shape == std::vector<std::uint32_t>{4});
  CHECK(split.train.target_size == 1);
  CHECK(split.validation.targets == std::vector<float>{10, 11, 12, 13, 14});
  CHECK(x_at(split.validation, 1) == 10.5f);
  CHECK(data_shape(options).outputs == 1);
  CHECK_FALSE(load_test_set(options).has_value());
  write_npy(dir.file("y.npy"), "<f4", {30, 2}, rows(30, 2));
  split = load_split(options);
  CHECK(split.train.target_size == 2);
  CHECK(split.train.outputs() == 2);
  CHECK(split.validation.targets.size() == 10);
}

TEST_CASE("npy: images [N, H, W] get one channel and float32 images stay float32") {
  TempDir dir;
  write_npy(dir.file("x.npy"), "<f4", {20, 3, 2}, rows(20, 6));
  write_npy(dir.file("y.npy"), "<i8", {20}, labels(20, 4));
  DataOptions options;
  options.format = DataFormat::Npy;
  options.x = dir.file("x.npy");
  options.y = dir.file("y.npy");
  const auto split = load_split(options);
  CHECK(split.train.sample_shape == std::vector<std::uint32_t>{1, 3, 2});
  CHECK(split.train.x_type == ElementType::Float32);
  CHECK(split.train.images());
  CHECK(split.train.count == 18);
  CHECK(split.train.classes == 4);
}

TEST_CASE("data options survive JSON, and a malformed block is an input error") {
  DataOptions options;
  options.format = DataFormat::Hdf5;
  options.task = Task::Regression;
  options.path = "/d/a.h5";
  options.test_path = "/d/b.h5";
  options.x = "inputs";
  options.validation_size = 7;
  options.normalize = false;
  options.augment.flip = true;
  options.order_per_trial = true;
  const nlohmann::json j = options;
  const auto back = j.get<DataOptions>();
  CHECK(nlohmann::json(back) == j);
  CHECK(back.path == "/d/a.h5");
  CHECK(back.task == Task::Regression);
  CHECK_FALSE(back.normalize);
  CHECK(back.augment.flip);
  CHECK(back.order_per_trial);
  auto old = j;  // what a run recorded before the key existed
  old.erase("order");
  CHECK_FALSE(old.get<DataOptions>().order_per_trial);
  auto bad = j;
  bad["order"] = "random";
  CHECK_THROWS_WITH(bad.get<DataOptions>(), "data.order: unknown order \"random\"; expected shared or per_trial");
  bad = j;
  bad["format"] = "csv";
  CHECK_THROWS_WITH(bad.get<DataOptions>(), "data.format: unknown format \"csv\"; expected idx, hdf5 or npy");
  bad = j;
  bad.erase("augment");
  CHECK_THROWS_WITH(bad.get<DataOptions>(), Catch::StartsWith("data: malformed data options"));
}
