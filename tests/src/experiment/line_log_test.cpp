#include <catch2/catch.hpp>

#include <sys/resource.h>

#include <csignal>
#include <fstream>

#include "../../temp_dir.hpp"
#include "experiment/line_log.hpp"
#include "packtune/error.hpp"

using namespace packtune;

namespace {

std::string text_of(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// Caps the size of files this process writes, as a full disk would: a write past the cap
// stops part-way and the next one fails with EFBIG (SIGXFSZ ignored).
class FileSizeCap {
 public:
  explicit FileSizeCap(rlim_t bytes) {
    previous_signal_ = std::signal(SIGXFSZ, SIG_IGN);
    ::getrlimit(RLIMIT_FSIZE, &previous_);
    rlimit cap = previous_;
    cap.rlim_cur = bytes;
    ::setrlimit(RLIMIT_FSIZE, &cap);
  }
  ~FileSizeCap() {
    ::setrlimit(RLIMIT_FSIZE, &previous_);
    std::signal(SIGXFSZ, previous_signal_);
  }

 private:
  rlimit previous_{};
  void (*previous_signal_)(int) = nullptr;
};

}  // namespace

TEST_CASE("a failed write leaves whole lines only, keeps the lines pending, and says what to do") {
  testing::TempDir dir;
  const auto path = dir.file("results.jsonl");
  auto log = LineLog::create(path, "free space there");
  log.append({{"a", 1}});
  log.flush(false);
  const auto first = text_of(path);
  REQUIRE(first == "{\"a\":1}\n");
  log.append({{"b", std::string(100, 'x')}});
  log.append({{"c", 3}});
  {
    FileSizeCap cap(first.size() + 20);  // room for part of the next line only
    try {
      log.flush(true);
      FAIL("no error");
    } catch (const Error& e) {
      CHECK_THAT(e.what(), Catch::Contains(path) && Catch::Contains("cannot write") &&
                               Catch::Contains("free space there"));
    }
  }
  CHECK(text_of(path) == first);
  CHECK(log.dirty());
  log.flush(true);  // the space is back: the same lines, once each
  CHECK(text_of(path) == first + "{\"b\":\"" + std::string(100, 'x') + "\"}\n{\"c\":3}\n");
  CHECK_FALSE(log.dirty());
}

TEST_CASE("a reopened log continues after its whole lines") {
  testing::TempDir dir;
  const auto path = dir.file("log.jsonl");
  std::ofstream(path) << "{\"a\":1}\n{\"b\":";
  {
    auto log = LineLog::reopen(path, 8, "");
    log.append({{"c", 3}});
    log.flush(false);
  }
  CHECK(text_of(path) == "{\"a\":1}\n{\"c\":3}\n");
  CHECK_THROWS_AS(LineLog::reopen(dir.file("missing.jsonl"), 0, ""), Error);
}
