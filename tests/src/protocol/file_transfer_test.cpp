#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <random>
#include <set>

#include "../../file_bytes.hpp"
#include "../../temp_dir.hpp"
#include "packtune/error.hpp"
#include "protocol/file_transfer.hpp"

using namespace packtune;
using namespace packtune::testing;

namespace {

// Plays the holder for `fetcher` from `dir`, with `tamper` seeing every answer before it goes
// back (return false to lose it). Returns the most requests ever outstanding.
template <class Tamper>
int pump(ChunkFetcher& fetcher, const std::string& dir, const TransferOptions& options, Tamper tamper) {
  int most = 0;
  for (int rounds = 0; rounds < 10000 && !fetcher.done() && !fetcher.failed(); ++rounds) {
    auto requests = fetcher.take_requests();
    most = std::max(most, fetcher.outstanding());
    if (requests.empty()) {
      fetcher.on_tick(ChunkFetcher::Clock::now() + std::chrono::seconds(3600));
      continue;
    }
    for (const auto& r : requests) {
      auto [chunk, data] = serve_chunk(dir, r, options.chunk_bytes);
      std::string bytes(static_cast<const char*>(data.data()), data.size());
      if (tamper(chunk, bytes)) fetcher.on_chunk(chunk, bytes.data(), bytes.size());
    }
  }
  return most;
}

// A file of `size` random bytes to fetch from `src` into `dst`, in chunks of 1 KiB.
struct SmallFile {
  TempDir src, dst;
  std::string bytes;
  TransferOptions options;
  SmallFile(std::size_t size, unsigned seed) : bytes(random_bytes(size, seed)) {
    write_file(src.file("t.h5"), bytes);
    options.chunk_bytes = 1024;
  }
};

}  // namespace

TEST_CASE("only plain checkpoint file names are served or stored") {
  CHECK(is_transfer_name("trial-3-budget-0.25.h5"));
  CHECK_FALSE(is_transfer_name("../etc/passwd.h5"));
  CHECK_FALSE(is_transfer_name("a/b.h5"));
  CHECK_FALSE(is_transfer_name(".store"));
  CHECK_FALSE(is_transfer_name("trial-3.txt"));
  CHECK_FALSE(is_transfer_name(""));
}

TEST_CASE("serve_chunk reads what was asked, and refuses what it must not serve") {
  TempDir dir;
  write_file(dir.file("a.h5"), "0123456789");
  auto [chunk, data] = serve_chunk(dir.path().string(), {7, "a.h5", 4, 100}, 3);
  CHECK(chunk.transfer == 7);
  CHECK(chunk.total == 10);
  CHECK(chunk.error.empty());
  CHECK(std::string(static_cast<const char*>(data.data()), data.size()) == "456");

  auto [end, none] = serve_chunk(dir.path().string(), {7, "a.h5", 12, 100}, 3);
  CHECK(end.error.empty());
  CHECK(none.size() == 0);

  CHECK_THAT(serve_chunk(dir.path().string(), {7, "missing.h5", 0, 10}, 3).first.error, Catch::Contains("cannot open"));
  CHECK_THAT(serve_chunk(dir.path().string(), {7, "../a.h5", 0, 10}, 3).first.error, Catch::Contains("not a checkpoint name"));
}

TEST_CASE("a fetch keeps at most a window of chunks outstanding and rebuilds the file exactly") {
  TempDir src, dst;
  const auto bytes = random_bytes(10'500, 1);
  write_file(src.file("t.h5"), bytes);
  TransferOptions options;
  options.chunk_bytes = 1000;
  options.window = 3;
  ChunkFetcher fetcher(1, "t.h5", dst.file("t.h5"), options);
  const int most = pump(fetcher, src.path().string(), options, [](auto&, auto&) { return true; });
  REQUIRE(fetcher.done());
  CHECK(most <= 3);
  CHECK(most == 3);
  CHECK(read_file(dst.file("t.h5")) == bytes);
  CHECK_FALSE(std::filesystem::exists(dst.file("t.h5.part")));
}

TEST_CASE("lost and duplicated chunks are asked for again and ignored") {
  TempDir src, dst;
  const auto bytes = random_bytes(5'000, 2);
  write_file(src.file("t.h5"), bytes);
  TransferOptions options;
  options.chunk_bytes = 700;
  options.window = 4;
  ChunkFetcher fetcher(1, "t.h5", dst.file("t.h5"), options);
  std::set<std::uint64_t> lost;
  pump(fetcher, src.path().string(), options, [&](const protocol::Chunk& c, std::string& data) {
    if (c.offset == 2100 && lost.insert(c.offset).second) return false;  // lost once
    if (c.offset == 1400) fetcher.on_chunk(c, data.data(), data.size());  // delivered twice
    return true;
  });
  REQUIRE(fetcher.done());
  CHECK(lost.size() == 1);
  CHECK(read_file(dst.file("t.h5")) == bytes);
}

TEST_CASE("a file that arrives damaged is fetched again, and given up after the attempts") {
  TempDir src, dst;
  const auto bytes = random_bytes(3'000, 3);
  write_file(src.file("t.h5"), bytes);
  TransferOptions options;
  options.chunk_bytes = 1024;
  auto verify = [&](const std::string& path) {
    if (read_file(path) != bytes) throw InputError("checksum mismatch");
  };
  int damaged = 0;
  auto flip_first = [&](const protocol::Chunk& c, std::string& data) {
    if (c.offset == 1024 && damaged++ == 0) data[5] ^= 1;
    return true;
  };
  ChunkFetcher once(1, "t.h5", dst.file("t.h5"), options, verify);
  pump(once, src.path().string(), options, flip_first);
  REQUIRE(once.done());
  CHECK(read_file(dst.file("t.h5")) == bytes);

  ChunkFetcher always(2, "t.h5", dst.file("u.h5"), options, verify);
  pump(always, src.path().string(), options, [](const protocol::Chunk& c, std::string& data) {
    if (c.offset == 0) data[0] ^= 1;
    return true;
  });
  REQUIRE(always.failed());
  CHECK_THAT(always.error(), Catch::Contains("damaged") && Catch::Contains("checksum mismatch"));
  CHECK_FALSE(std::filesystem::exists(dst.file("u.h5")));
  CHECK_FALSE(std::filesystem::exists(dst.file("u.h5.part")));
}

TEST_CASE("a fetch of a missing file fails with the holder's reason") {
  TempDir src, dst;
  TransferOptions options;
  ChunkFetcher fetcher(1, "gone.h5", dst.file("gone.h5"), options);
  pump(fetcher, src.path().string(), options, [](auto&, auto&) { return true; });
  REQUIRE(fetcher.failed());
  CHECK_THAT(fetcher.error(), Catch::Contains("gone.h5") && Catch::Contains("cannot open"));
}

TEST_CASE("a holder that never answers fails the fetch after its attempts") {
  TempDir src, dst;
  TransferOptions options;
  options.attempts = 2;
  ChunkFetcher fetcher(1, "t.h5", dst.file("t.h5"), options);
  CHECK(fetcher.take_requests().size() == 1);
  fetcher.on_tick(ChunkFetcher::Clock::now() + std::chrono::seconds(11));
  CHECK(fetcher.take_requests().size() == 1);  // asked again
  fetcher.on_tick(ChunkFetcher::Clock::now() + std::chrono::seconds(22));
  REQUIRE(fetcher.failed());
  CHECK_THAT(fetcher.error(), Catch::Contains("no answer"));
}

TEST_CASE("a holder that serves more than it offered is refused before the file grows") {
  SmallFile file(50'000, 6);
  auto& [src, dst, bytes, options] = file;
  ChunkFetcher fetcher(1, "t.h5", dst.file("t.h5"), options, {}, 10);  // the Offer said 10 bytes
  pump(fetcher, src.path().string(), options, [](auto&, auto&) { return true; });
  REQUIRE(fetcher.failed());
  CHECK_THAT(fetcher.error(), Catch::Contains("offered as 10 bytes") && Catch::Contains("50000"));
  CHECK_FALSE(std::filesystem::exists(dst.file("t.h5.part")));

  ChunkFetcher honest(2, "t.h5", dst.file("t.h5"), options, {}, bytes.size());
  pump(honest, src.path().string(), options, [](auto&, auto&) { return true; });
  REQUIRE(honest.done());
  CHECK(read_file(dst.file("t.h5")) == bytes);
}

TEST_CASE("with verify_later the owner verifies an arrived file, which is fetched again when damaged") {
  SmallFile file(3'000, 7);
  auto& [src, dst, bytes, options] = file;
  options.verify_later = true;
  ChunkFetcher fetcher(1, "t.h5", dst.file("t.h5"), options);
  const auto serve = [&] {
    for (const auto& r : fetcher.take_requests()) {
      auto [chunk, data] = serve_chunk(src.path().string(), r, options.chunk_bytes);
      fetcher.on_chunk(chunk, data.data(), data.size());
    }
  };
  for (int i = 0; i < 10 && !fetcher.arrived(); ++i) serve();
  REQUIRE(fetcher.arrived());
  CHECK(read_file(fetcher.part_path()) == bytes);
  CHECK_FALSE(std::filesystem::exists(dst.file("t.h5")));
  fetcher.on_verified("bad magic");
  CHECK_FALSE(fetcher.arrived());
  for (int i = 0; i < 10 && !fetcher.arrived(); ++i) serve();
  REQUIRE(fetcher.arrived());
  fetcher.on_verified("");
  REQUIRE(fetcher.done());
  CHECK(read_file(dst.file("t.h5")) == bytes);
}
