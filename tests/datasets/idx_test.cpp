#include <catch2/catch.hpp>

#include <fstream>

#include "../temp_dir.hpp"
#include "datasets/idx.hpp"
#include "packtune/error.hpp"

using namespace packtune::datasets;
using packtune::InputError;
using packtune::testing::TempDir;

namespace {
IdxArray images(std::uint32_t n) {
  IdxArray a;
  a.dims = {n, 2, 3};
  for (std::uint32_t i = 0; i < n * 6; ++i) a.data.push_back(static_cast<std::uint8_t>(i * 7));
  return a;
}
}  // namespace

TEST_CASE("IDX files round-trip, plain and gzip-compressed") {
  TempDir dir;
  for (const char* name : {"a-idx3-ubyte", "a-idx3-ubyte.gz"}) {
    write_idx(dir.file(name), images(5));
    const auto back = read_idx(dir.file(name));
    CHECK(back.dims == std::vector<std::uint32_t>{5, 2, 3});
    CHECK(back.data == images(5).data);
  }
}

TEST_CASE("the header is big-endian with the unsigned-byte type code") {
  TempDir dir;
  write_idx(dir.file("x"), images(258));
  std::ifstream in(dir.file("x"), std::ios::binary);
  unsigned char header[8];
  in.read(reinterpret_cast<char*>(header), 8);
  CHECK(header[2] == 0x08);
  CHECK(header[3] == 3);
  CHECK(header[6] == 1);  // 258 = 0x0102
  CHECK(header[7] == 2);
}

TEST_CASE("a limit reads only the first items") {
  TempDir dir;
  write_idx(dir.file("x.gz"), images(10));
  const auto back = read_idx(dir.file("x.gz"), 4);
  CHECK(back.dims[0] == 4);
  CHECK(back.data.size() == 4 * 6);
  CHECK(std::equal(back.data.begin(), back.data.end(), images(10).data.begin()));
}

TEST_CASE("bad IDX files are input errors that name the file") {
  TempDir dir;
  CHECK_THROWS_WITH(read_idx(dir.file("missing.gz")), Catch::Contains("not found"));

  std::ofstream(dir.file("text")) << "hello, this is not IDX";
  CHECK_THROWS_WITH(read_idx(dir.file("text")), Catch::Contains("bad magic"));

  write_idx(dir.file("full"), images(10));
  std::ifstream in(dir.file("full"), std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), {});
  std::ofstream(dir.file("cut"), std::ios::binary) << bytes.substr(0, bytes.size() - 5);
  CHECK_THROWS_AS(read_idx(dir.file("cut")), InputError);
  CHECK_THROWS_WITH(read_idx(dir.file("cut")), Catch::Contains("truncated"));
}
