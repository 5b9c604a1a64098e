#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
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

TEST_CASE("a fresh work folder first removes the work folders of processes that are gone") {
  testing::TempDir dir;
  TmpdirSet set(dir.path().string());
  // Above the largest pid the kernel gives, so no process has it, however busy the machine.
  pid_t gone = 0;
  {
    std::FILE* f = std::fopen("/proc/sys/kernel/pid_max", "r");
    REQUIRE(f != nullptr);
    REQUIRE(std::fscanf(f, "%d", &gone) == 1);
    std::fclose(f);
    ++gone;
  }
  const auto path = [&](const std::string& name) { return dir.path() / name; };
  const auto left = [&](const std::string& owner, pid_t pid) {
    return path("packtune-" + owner + "-" + std::to_string(pid));
  };
  // What a plugin's description, an actor, a node, its relay and a driver killed hard leave behind.
  for (const std::string owner : {"describe", "actor", "node", "relay", "driver", "sweep"}) {
    fs::create_directories(left(owner, gone) / "inside");
  }
  // Kept: a live process's folder, a name no work folder has, and what is not a folder.
  fs::create_directory(left("describe", ::getppid()));
  fs::create_directory(path("packtune-other-" + std::to_string(gone)));
  fs::create_directory(path("packtune-describe-" + std::to_string(gone) + "x"));
  { std::FILE* f = std::fopen(left("actor", gone + 1).c_str(), "w"); std::fclose(f); }
  fs::create_directory_symlink(dir.path() / "elsewhere", left("node", gone + 1));

  const auto work = util::fresh_work_dir("sweep");
  CHECK(fs::is_directory(work));
  for (const std::string owner : {"describe", "actor", "node", "relay", "driver", "sweep"}) {
    INFO(owner);
    CHECK_FALSE(fs::exists(left(owner, gone)));
  }
  CHECK(fs::is_directory(left("describe", ::getppid())));
  CHECK(fs::is_directory(path("packtune-other-" + std::to_string(gone))));
  CHECK(fs::is_directory(path("packtune-describe-" + std::to_string(gone) + "x")));
  CHECK(fs::is_regular_file(left("actor", gone + 1)));
  CHECK(fs::is_symlink(left("node", gone + 1)));
}
