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

TEST_CASE("a .npy header is parsed strictly: a dict cut short or a key twice or bytes after it are refused") {
  TempDir dir;
  const auto path = dir.file("x.npy");
  const std::string data(32, '\0');  // 4 x 2 float32
  const auto read = [&](const std::string& dict) {
    write_npy_header(path, dict, data);
    try {
      const auto x = open_npy("data.x", path);
      return "accepted " + x->info().dtype_text + " " + x->info().shape_text();
    } catch (const packtune::InputError& e) {
      const std::string what = e.what();
      const std::string prefix = "data.x: " + path + ": ";
      return what.rfind(prefix, 0) == 0 ? what.substr(prefix.size()) : what;
    }
  };
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (4, 2), }", "accepted <f4 (4, 2)"},
      {"{\"shape\": (4,2), \"descr\": \"<f4\", \"fortran_order\": False}", "accepted <f4 (4, 2)"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (4, 2), ", "malformed .npy header (no closing brace)"},
      {"'descr': '<f4', 'fortran_order': False, 'shape': (4, 2), }", "malformed .npy header (no opening brace)"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (4, 2), 'shape': (8,), }",
       "malformed .npy header ('shape' given twice)"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (4, 2), }xyz",
       "malformed .npy header (3 byte(s) after the dict)"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (4, 2), 'align': True}",
       "malformed .npy header (unknown key 'align'; expected descr, fortran_order and shape)"},
      {"{'descr': '<f4', 'fortran_order': False}", "the .npy header has no 'shape'"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (8), }", "malformed .npy header (shape)"},
      {"{'descr': '<f4' 'fortran_order': False, 'shape': (4, 2), }",
       "malformed .npy header (expected ',' or '}' after 'descr')"},
      {"{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (4,), }",
       "the .npy header's descr is not a simple type (a structured array?)"},
  };
  for (const auto& [dict, expected] : cases) {
    CAPTURE(dict);
    CHECK(read(dict) == expected);
  }
}

namespace {
std::size_t pass_through(unsigned, std::size_t, const unsigned[], std::size_t bytes, std::size_t*, void**) {
  return bytes;
}
}  // namespace

TEST_CASE("an HDF5 dataset compressed with a filter this HDF5 lacks names the filter") {
  // As h5py's lzf (id 32000, h5py's own): here a filter registered while the file is written
  // and unregistered before it is read, with an id HDF5 keeps for tests (256 to 511).
  TempDir dir;
  const auto path = dir.file("d.h5");
  const H5Z_filter_t id = 300;
  const H5Z_class2_t filter{H5Z_CLASS_T_VERS, id, 1, 1, "test_squash", nullptr, nullptr, pass_through};
  REQUIRE(H5Zregister(&filter) >= 0);
  const auto values = rows(6, 2);
  {
    H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
    const hid_t file = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    const hsize_t dims[2] = {6, 2}, chunk[2] = {3, 2};
    const hid_t space = H5Screate_simple(2, dims, nullptr);
    const hid_t plist = H5Pcreate(H5P_DATASET_CREATE);
    H5Pset_chunk(plist, 2, chunk);
    H5Pset_filter(plist, id, H5Z_FLAG_MANDATORY, 0, nullptr);
    const hid_t ds = H5Dcreate2(file, "x", H5T_IEEE_F32LE, space, H5P_DEFAULT, plist, H5P_DEFAULT);
    REQUIRE(H5Dwrite(ds, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data()) >= 0);
    H5Dclose(ds);
    H5Pclose(plist);
    H5Sclose(space);
    REQUIRE(H5Fclose(file) >= 0);
  }
  REQUIRE(H5Zunregister(id) >= 0);
  auto x = open_hdf5("data.path", "data.x", path, "x");
  std::vector<float> two(4);
  unsigned major = 0, minor = 0, release = 0;
  H5get_libversion(&major, &minor, &release);
  const auto version = std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(release);
  CHECK_THROWS_WITH(x->read_rows(2, 4, two.data()),
                    "data.x: " + path + " dataset \"x\": cannot read rows 2 to 4: the dataset is compressed with HDF5 "
                    "filter test_squash (id 300), which this HDF5 library (" + version + ") does not have; rewrite it "
                    "with gzip (h5py: compression=\"gzip\") or uncompressed, or install the filter's plugin where "
                    "HDF5_PLUGIN_PATH points");
}

TEST_CASE("an HDF5 dataset's type and shape come from the file, big-endian converted on read") {
  TempDir dir;
  const auto path = dir.file("d.h5");
  const auto values = rows(6, 2);
  write_h5(path, "x", H5T_IEEE_F32BE, H5T_NATIVE_FLOAT, {6, 2}, values);
  write_h5(path, "y", H5T_STD_U16LE, H5T_NATIVE_INT64, {6}, labels(6, 3));
  auto x = open_hdf5("data.path", "data.x", path, "x");
  CHECK(x->info().dtype == DType::Float32);
  CHECK(x->info().shape == std::vector<std::uint64_t>{6, 2});
  CHECK(x->info().where == "data.x: " + path + " dataset \"x\"");
  std::vector<float> tail(4);
  x->read_rows(4, 6, tail.data());
  CHECK(tail == std::vector<float>(values.begin() + 8, values.end()));
  const auto y = open_hdf5("data.path", "data.y", path, "y");
  CHECK(y->info().dtype == DType::UInt16);
  CHECK(y->info().dtype_text == "uint16");
}

TEST_CASE("an HDF5 file or dataset packtune cannot read is refused naming the key, file and dataset") {
  TempDir dir;
  const auto path = dir.file("d.h5");
  CHECK_THROWS_WITH(open_hdf5("data.path", "data.x", path, "x"), "data.path: " + path + ": file not found");
  write_file(path, "");
  CHECK_THROWS_WITH(open_hdf5("data.path", "data.x", path, "x"), "data.path: " + path + ": empty file (0 bytes)");
  write_file(path, "plain text");
  CHECK_THROWS_WITH(open_hdf5("data.path", "data.x", path, "x"), "data.path: " + path + ": not an HDF5 file");
  std::remove(path.c_str());
  write_h5(path, "x", H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, {2, 2}, rows(2, 2));
  CHECK_THROWS_WITH(open_hdf5("data.path", "data.y", path, "labels"), "data.y: " + path + " dataset \"labels\": no such dataset");
}
