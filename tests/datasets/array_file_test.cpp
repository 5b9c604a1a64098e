#include <catch2/catch.hpp>

#include "../file_bytes.hpp"
#include "../temp_dir.hpp"
#include "data_files.hpp"
#include "datasets/array_file.hpp"
#include "packtune/error.hpp"

using namespace packtune::datasets;
using namespace packtune::testing;

TEST_CASE("a .npy file's header gives dtype and shape, its rows come from any offset") {
  TempDir dir;
  for (const int version : {1, 2}) {
    CAPTURE(version);
    const auto values = rows(5, 3);
    write_npy(dir.file("x.npy"), "<f4", {5, 3}, values, version);
    auto x = open_npy("data.x", dir.file("x.npy"));
    CHECK(x->info().dtype == DType::Float32);
    CHECK(x->info().shape == std::vector<std::uint64_t>{5, 3});
    CHECK(x->info().where == "data.x: " + dir.file("x.npy"));
    std::vector<float> two(6);
    x->read_rows(2, 4, two.data());
    CHECK(two == std::vector<float>(values.begin() + 6, values.begin() + 12));
  }
}

TEST_CASE("a .npy file's integer dtypes are told apart by kind and size") {
  TempDir dir;
  const std::vector<std::uint8_t> bytes(8, 1);
  const std::vector<std::pair<const char*, DType>> cases = {
      {"|u1", DType::UInt8}, {"|i1", DType::Int8}, {"<u2", DType::UInt16}, {"<i2", DType::Int16},
      {"<u4", DType::UInt32}, {"<i4", DType::Int32}, {"<u8", DType::UInt64}, {"<i8", DType::Int64},
      {"<f8", DType::Float64}, {"|b1", DType::Other}, {"<c8", DType::Other}};
  for (const auto& [descr, dtype] : cases) {
    CAPTURE(descr);
    write_npy(dir.file("y.npy"), descr, {1}, bytes);
    const auto y = open_npy("data.y", dir.file("y.npy"));
    CHECK(y->info().dtype == dtype);
    CHECK(y->info().dtype_text == descr);
  }
}

TEST_CASE("a .npy file packtune cannot read is refused naming the key and the file") {
  TempDir dir;
  const auto path = dir.file("x.npy");
  const auto values = rows(4, 2);
  const auto refused = [&](const std::string& why) {
    CHECK_THROWS_WITH(open_npy("data.x", path), Catch::StartsWith("data.x: " + path + ": ") && Catch::Contains(why));
  };
  refused("file not found");
  write_file(path, "");
  refused("empty file (0 bytes)");
  write_file(path, "not numpy at all");
  refused("not a NumPy .npy file");
  write_npy(path, "<f4", {4, 2}, values.data(), values.size() * 4, 1, true);
  refused("fortran_order is True");
  write_npy(path, ">f4", {4, 2}, values);
  refused("big-endian dtype >f4");
  write_npy(path, "<f4", {4, 2}, values.data(), 20);
  refused("holds 20 bytes of data, shape (4, 2) needs 32");
}

TEST_CASE("an HDF5 dataset's type and shape come from the file, big-endian converted on read") {
  TempDir dir;
  const auto path = dir.file("d.h5");
  const auto values = rows(6, 2);
  write_h5(path, "x", H5T_IEEE_F32BE, H5T_NATIVE_FLOAT, {6, 2}, values);
  write_h5(path, "y", H5T_STD_U16LE, H5T_NATIVE_INT64, {6}, labels(6, 3));
  auto x = open_hdf5("data.x", path, "x");
  CHECK(x->info().dtype == DType::Float32);
  CHECK(x->info().shape == std::vector<std::uint64_t>{6, 2});
  CHECK(x->info().where == "data.x: " + path + " dataset \"x\"");
  std::vector<float> tail(4);
  x->read_rows(4, 6, tail.data());
  CHECK(tail == std::vector<float>(values.begin() + 8, values.end()));
  const auto y = open_hdf5("data.y", path, "y");
  CHECK(y->info().dtype == DType::UInt16);
  CHECK(y->info().dtype_text == "uint16");
}

TEST_CASE("an HDF5 file or dataset packtune cannot read is refused naming the key, file and dataset") {
  TempDir dir;
  const auto path = dir.file("d.h5");
  CHECK_THROWS_WITH(open_hdf5("data.x", path, "x"), "data.x: " + path + ": file not found");
  write_file(path, "");
  CHECK_THROWS_WITH(open_hdf5("data.x", path, "x"), "data.x: " + path + ": empty file (0 bytes)");
  write_file(path, "plain text");
  CHECK_THROWS_WITH(open_hdf5("data.x", path, "x"), "data.x: " + path + ": not an HDF5 file");
  std::remove(path.c_str());
  write_h5(path, "x", H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, {2, 2}, rows(2, 2));
  CHECK_THROWS_WITH(open_hdf5("data.y", path, "labels"), "data.y: " + path + " dataset \"labels\": no such dataset");
}
