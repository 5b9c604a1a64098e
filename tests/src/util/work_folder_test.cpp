#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>

#include "../../temp_dir.hpp"
#include "packtune/error.hpp"
#include "util/work_folder.hpp"

using namespace packtune;
namespace fs = std::filesystem;

namespace {

// Sets $TMPDIR for one test and puts back what was there.
class TmpdirSet {
 public:
  explicit TmpdirSet(const std::string& value) {
    if (const char* old = std::getenv("TMPDIR")) old_ = old;
    ::setenv("TMPDIR", value.c_str(), 1);
  }
  ~TmpdirSet() {
    if (old_) ::setenv("TMPDIR", old_->c_str(), 1);
    else ::unsetenv("TMPDIR");
  }
  TmpdirSet(const TmpdirSet&) = delete;
  TmpdirSet& operator=(const TmpdirSet&) = delete;

 private:
  std::optional<std::string> old_;
};

}  // namespace

TEST_CASE("the temp folder is $TMPDIR, or /tmp when $TMPDIR names no folder") {
  testing::TempDir dir;
  {
    TmpdirSet set(dir.path().string());
    CHECK(util::temp_folder() == dir.path());
  }
  {
    TmpdirSet set((dir.path() / "not-there").string());
    CHECK(util::temp_folder() == fs::path("/tmp"));
  }
  {
    TmpdirSet set(dir.file("a-file"));
    { std::FILE* f = std::fopen(dir.file("a-file").c_str(), "w"); std::fclose(f); }
    CHECK(util::temp_folder() == fs::path("/tmp"));
  }
}

TEST_CASE("a fresh work folder is temp_folder()/packtune-OWNER-PID, made when missing and kept when there") {
  testing::TempDir dir;
  TmpdirSet set(dir.path().string());
  const auto work = util::fresh_work_dir("unit");
  CHECK(fs::path(work) == dir.path() / ("packtune-unit-" + std::to_string(::getpid())));
  CHECK(fs::is_directory(work));
  { std::FILE* f = std::fopen((fs::path(work) / "kept").c_str(), "w"); std::fclose(f); }
  CHECK(util::fresh_work_dir("unit") == work);
  CHECK(fs::exists(fs::path(work) / "kept"));
}

TEST_CASE("a work folder that cannot be made is an error naming it") {
  testing::TempDir dir;
  // A file where the folder would go.
  const auto blocked = dir.path() / ("packtune-blocked-" + std::to_string(::getpid()));
  { std::FILE* f = std::fopen(blocked.c_str(), "w"); std::fclose(f); }
  TmpdirSet set(dir.path().string());
  CHECK_THROWS_AS(util::fresh_work_dir("blocked"), Error);
  CHECK_THROWS_WITH(util::fresh_work_dir("blocked"), Catch::Contains("cannot create the work folder " + blocked.string()));
}

TEST_CASE("a work folder is made for its owner alone, and a link in its place is not used") {
  testing::TempDir dir;
  TmpdirSet set(dir.path().string());
  const auto work = util::fresh_work_dir("private");
  struct stat st {};
  REQUIRE(::stat(work.c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0700);
  // Another user's link, planted at the predictable name, would send the actors' files elsewhere.
  fs::create_directory(dir.path() / "elsewhere");
  fs::create_directory_symlink(dir.path() / "elsewhere", dir.path() / ("packtune-linked-" + std::to_string(::getpid())));
  CHECK_THROWS_WITH(util::fresh_work_dir("linked"), Catch::Contains("something else is there"));
  CHECK(fs::is_empty(dir.path() / "elsewhere"));
}
