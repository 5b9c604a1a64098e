#include <catch2/catch.hpp>

#include <cmath>
#include <limits>

#include "../file_bytes.hpp"
#include "../temp_dir.hpp"
#include "data_files.hpp"
#include "datasets/data_source.hpp"
#include "packtune/error.hpp"

using namespace packtune::datasets;
using namespace packtune::testing;

namespace {

// Good training data (20 rows of 3 features, 4 classes) and a test split of 5, in either format.
struct GoodSet {
  TempDir dir;
  DataOptions options;
  explicit GoodSet(DataFormat format) {
    options.format = format;
    for (const bool test : {false, true}) {
      const std::uint64_t n = test ? 5 : 20;
      if (format == DataFormat::Npy) {
        (test ? options.test_x : options.x) = dir.file(test ? "tx.npy" : "x.npy");
        (test ? options.test_y : options.y) = dir.file(test ? "ty.npy" : "y.npy");
        write_npy(test ? options.test_x : options.x, "<f4", {n, 3}, rows(n, 3));
        write_npy(test ? options.test_y : options.y, "<i8", {n}, labels(n, 4));
      } else {
        (test ? options.test_path : options.path) = dir.file(test ? "t.h5" : "d.h5");
        write(test ? options.test_path : options.path, n, rows(n, 3), labels(n, 4));
      }
    }
  }
  // Replaces an HDF5 file with datasets x (n rows) and y.
  static void write(const std::string& path, std::uint64_t n, const std::vector<float>& x,
                    const std::vector<std::int64_t>& y) {
    std::remove(path.c_str());
    write_h5(path, "x", H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, {n, x.size() / n}, x);
    write_h5(path, "y", H5T_STD_I64LE, H5T_NATIVE_INT64, {y.size()}, y);
  }
};
struct NpySet : GoodSet {
  NpySet() : GoodSet(DataFormat::Npy) {}
};
struct Hdf5Set : GoodSet {
  Hdf5Set() : GoodSet(DataFormat::Hdf5) {}
};

std::string error_of(const DataOptions& options) {
  try {
    check_data(options);
  } catch (const packtune::InputError& e) {
    return e.what();
  }
  return "(accepted)";
}

}  // namespace

TEST_CASE("good data passes the checks, in either format") {
  NpySet npy;
  CHECK(error_of(npy.options) == "(accepted)");
  Hdf5Set h5;
  CHECK(error_of(h5.options) == "(accepted)");
}

TEST_CASE("check_data: a missing file or dataset") {
  NpySet npy;
  std::remove(npy.options.test_y.c_str());
  CHECK(error_of(npy.options) == "data.test_y: " + npy.options.test_y + ": file not found");
  Hdf5Set h5;
  h5.options.y = "labels";
  CHECK(error_of(h5.options) == "data.y: " + h5.options.path + " dataset \"labels\": no such dataset");
}

TEST_CASE("check_data: x and y of different lengths") {
  NpySet npy;
  write_npy(npy.options.y, "<i8", {19}, labels(19, 4));
  CHECK(error_of(npy.options) == "data.y: " + npy.options.y + ": 19 rows, but " + npy.options.x +
                                     " has 20 samples; expected one label per sample");
  Hdf5Set h5;
  Hdf5Set::write(h5.options.test_path, 5, rows(5, 3), labels(4, 4));
  CHECK(error_of(h5.options) == "data.test_path: " + h5.options.test_path + " dataset \"y\": 4 rows, but " +
                                    h5.options.test_path + " dataset \"x\" has 5 samples; expected one label per sample");
}

TEST_CASE("check_data: labels outside 0..classes-1, negative ones, and test labels beyond the training classes") {
  NpySet npy;
  auto y = labels(20, 4);
  y[7] = -1;
  write_npy(npy.options.y, "<i8", {20}, y);
  CHECK(error_of(npy.options) == "data.y: " + npy.options.y + ": label -1 in row 7 outside 0..3");
  y[7] = 100000;
  write_npy(npy.options.y, "<i8", {20}, y);
  CHECK(error_of(npy.options) == "data.y: " + npy.options.y + ": label 100000 in row 7 asks for more than the "
                                     "100000 classes packtune allows");
  Hdf5Set h5;
  auto test_y = labels(5, 4);
  test_y[2] = 12;
  Hdf5Set::write(h5.options.test_path, 5, rows(5, 3), test_y);
  CHECK(error_of(h5.options) == "data.test_path: " + h5.options.test_path + " dataset \"y\": label 12 in row 2 "
                                    "outside 0..3 (the training split's classes)");
}

TEST_CASE("check_data: a uint64 label past int64's range is named as the file holds it") {
  const std::uint64_t largest = std::numeric_limits<std::uint64_t>::max();
  NpySet npy;
  std::vector<std::uint64_t> y(20, 1);
  y[7] = largest;
  write_npy(npy.options.y, "<u8", {20}, y);
  CHECK(error_of(npy.options) == "data.y: " + npy.options.y + ": label 18446744073709551615 in row 7 asks for "
                                     "more than the 100000 classes packtune allows");
  Hdf5Set h5;
  std::vector<std::uint64_t> test_y(5, 1);
  test_y[2] = std::uint64_t{1} << 63;
  std::remove(h5.options.test_path.c_str());
  write_h5(h5.options.test_path, "x", H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, {5, 3}, rows(5, 3));
  write_h5(h5.options.test_path, "y", H5T_STD_U64LE, H5T_NATIVE_UINT64, {5}, test_y);
  CHECK(error_of(h5.options) == "data.test_path: " + h5.options.test_path + " dataset \"y\": label "
                                    "9223372036854775808 in row 2 outside 0..3 (the training split's classes)");
}

TEST_CASE("check_data: NaN or Inf in x or in regression targets") {
  NpySet npy;
  auto x = rows(20, 3);
  x[3 * 11 + 2] = std::numeric_limits<float>::quiet_NaN();
  write_npy(npy.options.x, "<f4", {20, 3}, x);
  CHECK(error_of(npy.options) == "data.x: " + npy.options.x + ": NaN in row 11");
  Hdf5Set h5;
  h5.options.task = Task::Regression;
  auto targets = rows(20, 1);
  targets[4] = std::numeric_limits<float>::infinity();
  h5.options.test_path.clear();
  std::remove(h5.options.path.c_str());
  write_h5(h5.options.path, "x", H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, {20, 3}, rows(20, 3));
  write_h5(h5.options.path, "y", H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, {20}, targets);
  CHECK(error_of(h5.options) == "data.y: " + h5.options.path + " dataset \"y\": Inf in row 4");
}

TEST_CASE("check_data: unsupported dtypes and ranks") {
  NpySet npy;
  const std::vector<double> doubles(60, 1.0);
  write_npy(npy.options.x, "<f8", {20, 3}, doubles);
  CHECK(error_of(npy.options) == "data.x: " + npy.options.x + ": dtype <f8 unsupported; expected uint8 (images) or "
                                     "float32 (images or feature rows)");
  write_npy(npy.options.x, "|u1", {20, 3}, std::vector<std::uint8_t>(60));
  CHECK_THAT(error_of(npy.options), Catch::Contains("feature rows [N, D] of dtype |u1 unsupported; expected float32"));
  write_npy(npy.options.x, "<f4", {20}, rows(20, 1));
  CHECK(error_of(npy.options) == "data.x: " + npy.options.x + ": rank 1 (shape (20,)) unsupported; expected [N, D] "
                                     "feature rows, [N, H, W] or [N, C, H, W] images");
  write_npy(npy.options.x, "<f4", {20, 3}, rows(20, 3));
  write_npy(npy.options.y, "<f4", {20}, rows(20, 1));
  CHECK_THAT(error_of(npy.options), Catch::Contains("dtype <f4 unsupported for labels; expected an integer dtype"));
  write_npy(npy.options.y, "<i8", {10, 2}, labels(20, 4));
  CHECK_THAT(error_of(npy.options), Catch::Contains("rank 2 (shape (10, 2)) unsupported for labels; expected [N]"));
  npy.options.task = Task::Regression;
  write_npy(npy.options.y, "<i8", {20}, labels(20, 4));
  CHECK_THAT(error_of(npy.options), Catch::Contains("dtype <i8 unsupported for regression targets; expected float32"));
}

TEST_CASE("check_data: an empty file, or one of no samples") {
  NpySet npy;
  write_file(npy.options.y, "");
  CHECK(error_of(npy.options) == "data.y: " + npy.options.y + ": empty file (0 bytes)");
  write_npy(npy.options.x, "<f4", {0, 3}, std::vector<float>{});
  write_npy(npy.options.y, "<i8", {0}, std::vector<std::int64_t>{});
  CHECK(error_of(npy.options) == "data.x: " + npy.options.x + ": no samples (shape (0, 3))");
  Hdf5Set h5;
  write_file(h5.options.path, "");
  CHECK(error_of(h5.options) == "data.path: " + h5.options.path + ": empty file (0 bytes)");
}

TEST_CASE("check_data: a test split whose samples differ from the training ones") {
  NpySet npy;
  write_npy(npy.options.test_x, "<f4", {5, 4}, rows(5, 4));
  CHECK(error_of(npy.options) == "data.test_x: " + npy.options.test_x + ": sample shape (4,) differs from the "
                                     "training split's (3,)");
  Hdf5Set h5;
  h5.options.task = Task::Regression;
  for (const auto* set : {&h5.options.path, &h5.options.test_path}) {
    const bool test = set == &h5.options.test_path;
    std::remove(set->c_str());
    write_h5(*set, "x", H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, {5, 3}, rows(5, 3));
    write_h5(*set, "y", H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, {5, test ? 2u : 1u}, rows(5, test ? 2 : 1));
  }
  CHECK(error_of(h5.options) == "data.test_path: " + h5.options.test_path + " dataset \"y\": 2 targets per sample, "
                                    "the training split has 1");
}

TEST_CASE("check_data: a validation split that leaves nothing to train, augmentation of rows") {
  NpySet npy;
  npy.options.validation_size = 20;
  CHECK(error_of(npy.options) == "data.validation_size: 20 leaves no training examples out of 20 in " + npy.options.x);
  npy.options.validation_size = 0;
  npy.options.augment.flip = true;
  CHECK(error_of(npy.options) == "data.augment: crops and flips are for images, but " + npy.options.x +
                                     " holds feature rows of shape (3,)");
}
