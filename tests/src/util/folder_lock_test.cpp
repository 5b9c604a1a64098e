#include <catch2/catch.hpp>

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "../../temp_dir.hpp"
#include "packtune/error.hpp"
#include "util/folder_lock.hpp"

using namespace packtune;
namespace fs = std::filesystem;

TEST_CASE("a folder is locked once: a second lock is refused as bad input until the first ends") {
  testing::TempDir dir;
  const auto folder = dir.path().string();
  {
    util::FolderLock first(folder);
    // flock locks belong to an open file description: a second open is refused even here.
    CHECK_THROWS_AS(util::FolderLock(folder), InputError);
    CHECK_THROWS_WITH(util::FolderLock(folder), Catch::Contains("another packtune driver is running this experiment") &&
                                                    Catch::Contains("packtune run --resume " + folder));
  }
  util::FolderLock again(folder);
  CHECK(again.still_at(folder));
}

TEST_CASE("a process the lock holder starts does not keep the folder locked") {
  testing::TempDir dir;
  const auto folder = dir.path().string();
  pid_t child = -1;
  {
    util::FolderLock lock(folder);
    // A close-on-exec pipe tells when the child has exec'd: until then it holds a copy of
    // every descriptor, the lock's too.
    int execed[2];
    REQUIRE(::pipe2(execed, O_CLOEXEC) == 0);
    child = ::fork();
    REQUIRE(child >= 0);
    if (child == 0) {
      ::execl("/bin/sleep", "sleep", "30", static_cast<char*>(nullptr));
      ::_exit(127);
    }
    ::close(execed[1]);
    char byte;
    CHECK(::read(execed[0], &byte, 1) == 0);
    ::close(execed[0]);
  }
  // The holder let go while the child still runs: a descriptor inherited across exec would
  // hold the lock for as long as the child lives (an actor outliving a killed driver).
  CHECK_NOTHROW(util::FolderLock(folder));
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
}

TEST_CASE("a lock knows when its folder was deleted or moved away and replaced") {
  testing::TempDir dir;
  const auto folder = (dir.path() / "run").string();
  fs::create_directories(folder);
  util::FolderLock lock(folder);
  CHECK(lock.still_at(folder));
  fs::rename(folder, dir.path() / "moved");
  CHECK_FALSE(lock.still_at(folder));
  fs::create_directories(folder);
  CHECK_FALSE(lock.still_at(folder));  // a new folder of the same name is not the locked one
  CHECK(lock.still_at((dir.path() / "moved").string()));
  fs::remove_all(dir.path() / "moved");
  CHECK_FALSE(lock.still_at((dir.path() / "moved").string()));
}

TEST_CASE("a folder that does not exist cannot be locked") {
  testing::TempDir dir;
  const auto missing = (dir.path() / "missing").string();
  CHECK_THROWS_AS(util::FolderLock(missing), Error);
  CHECK_THROWS_WITH(util::FolderLock(missing), Catch::Contains("cannot open the results folder " + missing));
}

TEST_CASE("a file written through the held path lands in the locked folder, never in its replacement") {
  testing::TempDir dir;
  const auto folder = (dir.path() / "run").string();
  fs::create_directories(folder);
  util::FolderLock lock(folder);
  fs::rename(folder, dir.path() / "moved");
  fs::create_directories(folder);
  { std::ofstream(lock.held_path() + "/report.html") << "page"; }
  CHECK(fs::exists(dir.path() / "moved" / "report.html"));
  CHECK(fs::is_empty(folder));
  fs::remove_all(dir.path() / "moved");
  std::ofstream gone(lock.held_path() + "/report.html");
  CHECK_FALSE(gone.is_open());  // a deleted folder takes no new file
}
