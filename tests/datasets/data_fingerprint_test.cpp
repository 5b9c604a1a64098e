#include <catch2/catch.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <random>

#include <nlohmann/json.hpp>

#include "../temp_dir.hpp"
#include "datasets/data_fingerprint.hpp"
#include "packtune/error.hpp"

using namespace packtune::datasets;
using namespace packtune::testing;

namespace {

void write_random(const std::string& path, std::size_t size) {
  std::mt19937 rng(7);
  std::string bytes(size, '\0');
  for (auto& b : bytes) b = static_cast<char>(rng());
  std::ofstream(path, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

// Overwrites one byte in place and gives the file its old modification time back: only the
// content can tell.
void flip_byte_keeping_time(const std::string& path, std::uint64_t offset) {
  struct stat st {};
  REQUIRE(::stat(path.c_str(), &st) == 0);
  const int fd = ::open(path.c_str(), O_RDWR);
  REQUIRE(fd >= 0);
  unsigned char b = 0;
  REQUIRE(::pread(fd, &b, 1, static_cast<off_t>(offset)) == 1);
  b ^= 0xff;
  REQUIRE(::pwrite(fd, &b, 1, static_cast<off_t>(offset)) == 1);
  ::close(fd);
  const struct timespec times[2] = {st.st_atim, st.st_mtim};
  REQUIRE(::utimensat(AT_FDCWD, path.c_str(), times, 0) == 0);
}

// The bytes this process has read through read(2) and pread(2) so far.
std::uint64_t bytes_read() {
  std::ifstream io("/proc/self/io");
  std::string key;
  std::uint64_t value = 0;
  while (io >> key >> value) {
    if (key == "rchar:") return value;
  }
  FAIL("no rchar in /proc/self/io");
  return 0;
}

}  // namespace

TEST_CASE("a fingerprint samples both ends and 16 blocks between them, the whole of a small file") {
  CHECK(sampled_ranges(0).empty());
  CHECK(sampled_ranges(1000).size() == 1);
  CHECK(sampled_ranges(1000)[0].length == 1000);
  CHECK(sampled_ranges(192 * 1024).size() == 1);
  for (const std::uint64_t size : {192ull * 1024 + 1, 1ull << 20, 10ull << 30}) {
    const auto ranges = sampled_ranges(size);
    REQUIRE(ranges.size() == 18);
    CHECK(ranges.front().offset == 0);
    CHECK(ranges.front().length == 64 * 1024);
    CHECK(ranges.back().offset + ranges.back().length == size);
    std::uint64_t total = 0, end = 0;
    for (const auto& r : ranges) {
      CHECK(r.offset >= end);  // ascending and disjoint
      end = r.offset + r.length;
      total += r.length;
    }
    CHECK(total == 192 * 1024);
  }
}

TEST_CASE("a data file's fingerprint changes with its size and with its bytes at the head, the tail and a sampled block") {
  TempDir dir;
  const auto path = dir.file("x.npy");
  const std::uint64_t size = 1 << 20;
  write_random(path, size);
  const auto first = fingerprint_file(path);
  CHECK(first.path == path);
  CHECK(first.size == size);
  CHECK(first.sample_sha256.size() == 64);
  CHECK(fingerprint_file(path) == first);  // stable
  CHECK(data_changes({first}, {fingerprint_file(path)}).empty());

  const auto ranges = sampled_ranges(size);
  // Head, tail, the middle of a sampled block: each changes the content's hash alone.
  for (const std::uint64_t offset : {std::uint64_t{10}, size - 10, ranges[6].offset + 100}) {
    CAPTURE(offset);
    const auto before = fingerprint_file(path);
    flip_byte_keeping_time(path, offset);
    const auto after = fingerprint_file(path);
    CHECK(after.size == before.size);
    CHECK(after.mtime_ns == before.mtime_ns);
    CHECK(after.sample_sha256 != before.sample_sha256);
    const auto changes = data_changes({before}, {after});
    REQUIRE(changes.size() == 1);
    CHECK(changes[0] == path + " (content)");
  }

  SECTION("a byte between the sampled blocks is not read: only the modification time tells") {
    const auto before = fingerprint_file(path);
    flip_byte_keeping_time(path, ranges[6].offset + ranges[6].length + 10);
    CHECK(fingerprint_file(path) == before);
    ::utimensat(AT_FDCWD, path.c_str(), nullptr, 0);  // now
    const auto after = fingerprint_file(path);
    CHECK(after.sample_sha256 == before.sample_sha256);
    CHECK(after.mtime_ns != before.mtime_ns);
    CHECK(data_changes({before}, {after}) ==
          std::vector<std::string>{path + " (modification time; size and sampled content the same)"});
  }
  SECTION("a size") {
    const auto before = fingerprint_file(path);
    std::ofstream(path, std::ios::binary | std::ios::app) << 'x';
    const auto after = fingerprint_file(path);
    CHECK(after.size == size + 1);
    const auto changes = data_changes({before}, {after});
    REQUIRE(changes.size() == 1);
    CHECK(changes[0].rfind(path + " (size 1048576 -> 1048577 bytes, content", 0) == 0);
  }
}

TEST_CASE("a small file written again with the same bytes has not changed; one with other bytes has") {
  TempDir dir;
  const auto path = dir.file("y.npy");
  write_random(path, 9000);
  const auto before = fingerprint_file(path);
  ::utimensat(AT_FDCWD, path.c_str(), nullptr, 0);  // now
  const auto after = fingerprint_file(path);
  REQUIRE(after.mtime_ns != before.mtime_ns);
  CHECK(data_changes({before}, {after}).empty());  // hashed whole: the same bytes
  flip_byte_keeping_time(path, 4500);
  CHECK(data_changes({before}, {fingerprint_file(path)}) ==
        std::vector<std::string>{path + " (content, modification time)"});
}

TEST_CASE("a fingerprint reads 192 KiB of a file however large it is") {
  TempDir dir;
  const auto path = dir.file("large.npy");
  const std::uint64_t size = 8ull << 30;  // sparse: no disk taken
  {
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT, 0644);
    REQUIRE(fd >= 0);
    REQUIRE(::ftruncate(fd, static_cast<off_t>(size)) == 0);
    ::close(fd);
  }
  // OpenSSL reads its configuration (openssl.cnf, about 12 KB) at its first digest.
  write_random(dir.file("small"), 10);
  fingerprint_file(dir.file("small"));
  const auto before = bytes_read();
  const auto f = fingerprint_file(path);
  const auto read = bytes_read() - before;
  CHECK(f.size == size);
  CHECK(read >= 192 * 1024);
  CHECK(read < 200 * 1024);
}

TEST_CASE("data_changes names files gone and new, and fingerprints round-trip through JSON") {
  FileFingerprint x{"/d/x.npy", 100, 5, std::string(64, 'a')};
  FileFingerprint y{"/d/y.npy", 50, 6, std::string(64, 'b')};
  FileFingerprint t{"/d/t10k-images-idx3-ubyte.gz", 9, 7, std::string(64, 'c')};
  CHECK(data_changes({x, y}, {x, y}).empty());
  CHECK(data_changes({x, y}, {x}) == std::vector<std::string>{"/d/y.npy (gone)"});
  CHECK(data_changes({x}, {x, t}) == std::vector<std::string>{"/d/t10k-images-idx3-ubyte.gz (new)"});

  const nlohmann::json j = std::vector<FileFingerprint>{x, y};
  CHECK(j[0]["path"] == "/d/x.npy");
  CHECK(j.get<std::vector<FileFingerprint>>() == std::vector<FileFingerprint>{x, y});
  CHECK_THROWS_AS(nlohmann::json({{"path", "/d/x.npy"}}).get<FileFingerprint>(), packtune::InputError);
}

TEST_CASE("the fingerprinted files are those the data block reads: idx test files where they are, npy every file") {
  TempDir dir;
  DataOptions idx;
  idx.dir = dir.path().string();
  for (const char* name : {"train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz"}) write_random(dir.file(name), 10);
  CHECK(fingerprint_data(idx).size() == 2);
  write_random(dir.file("t10k-images-idx3-ubyte.gz"), 10);
  write_random(dir.file("t10k-labels-idx1-ubyte"), 10);
  const auto files = fingerprint_data(idx);
  REQUIRE(files.size() == 4);
  CHECK(files[2].path == dir.file("t10k-images-idx3-ubyte.gz"));
  CHECK(files[3].path == dir.file("t10k-labels-idx1-ubyte"));

  DataOptions npy;
  npy.format = DataFormat::Npy;
  npy.x = dir.file("x.npy");
  npy.y = dir.file("y.npy");
  npy.test_x = dir.file("tx.npy");
  npy.test_y = dir.file("ty.npy");
  for (const auto& p : {npy.x, npy.y, npy.test_x, npy.test_y}) write_random(p, 20);
  const auto all = fingerprint_data(npy);
  CHECK(all.size() == 4);
  ::unlink(npy.test_y.c_str());
  const auto left = fingerprint_data(npy);
  CHECK(left.size() == 3);
  CHECK(data_changes(all, left) == std::vector<std::string>{npy.test_y + " (gone)"});
}
