#include <catch2/catch.hpp>
#include <zlib.h>

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

namespace {
std::string bytes_of(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), {});
}
void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}
}  // namespace

TEST_CASE("a whole gzip file reads as zlib reads it: several members, bytes after them, damage found") {
  TempDir dir;
  const auto array = images(3000);  // 18 KB: a damaged byte lands inside compressed data
  write_idx(dir.file("plain"), array);
  const auto plain = bytes_of(dir.file("plain"));
  // Two members, each of half the file: the last member's size is not the whole's.
  const auto half = plain.size() / 2;
  write_idx(dir.file("one.gz"), array);
  std::string members;
  for (const auto& part : {plain.substr(0, half), plain.substr(half)}) {
    gzFile out = gzopen(dir.file("part.gz").c_str(), "wb");
    REQUIRE(gzwrite(out, part.data(), static_cast<unsigned>(part.size())) == static_cast<int>(part.size()));
    gzclose(out);
    members += bytes_of(dir.file("part.gz"));
  }
  write_bytes(dir.file("two.gz"), members);
  write_bytes(dir.file("padded.gz"), bytes_of(dir.file("one.gz")) + std::string(16, '\0'));
  // Junk after the member whose last four bytes, read as a gzip trailer, would claim 4 GiB.
  write_bytes(dir.file("junk.gz"), bytes_of(dir.file("one.gz")) + "junk\xff\xff\xff\xff");
  // Content past what the header describes: read as far as the header says, as zlib stops.
  write_bytes(dir.file("longer"), plain + "more");
  gzFile longer = gzopen(dir.file("longer.gz").c_str(), "wb");
  REQUIRE(gzwrite(longer, (plain + "more").data(), static_cast<unsigned>(plain.size() + 4)) ==
          static_cast<int>(plain.size() + 4));
  gzclose(longer);
  for (const char* name : {"one.gz", "two.gz", "padded.gz", "junk.gz", "longer", "longer.gz"}) {
    INFO(name);
    const auto whole = read_idx(dir.file(name));
    CHECK(whole.dims == array.dims);
    CHECK(whole.data == array.data);
    CHECK(whole.data.capacity() <= array.data.size() + 32);  // sized by the header, not the file's tail
    // The oracle: a prefix of all but one item streams through zlib.
    const auto prefix = read_idx(dir.file(name), 2999);
    CHECK(std::equal(prefix.data.begin(), prefix.data.end(), whole.data.begin()));
  }

  auto damaged = bytes_of(dir.file("one.gz"));
  damaged[damaged.size() / 2] = static_cast<char>(damaged[damaged.size() / 2] ^ 0x5a);
  write_bytes(dir.file("damaged.gz"), damaged);
  CHECK_THROWS_WITH(read_idx(dir.file("damaged.gz")), Catch::Contains("truncated or corrupt"));
  const auto one = bytes_of(dir.file("one.gz"));
  write_bytes(dir.file("cut.gz"), one.substr(0, one.size() - 5));
  CHECK_THROWS_WITH(read_idx(dir.file("cut.gz")), Catch::Contains("truncated or corrupt"));
  // A header that claims 7.8 GB of a file of a few bytes is refused before the claim is allocated.
  IdxArray claim;
  claim.dims = {10000000, 28, 28};
  claim.data = {1, 2, 3};
  write_idx(dir.file("claim.gz"), claim);
  CHECK_THROWS_WITH(read_idx(dir.file("claim.gz")), Catch::Contains("truncated or corrupt"));
}
