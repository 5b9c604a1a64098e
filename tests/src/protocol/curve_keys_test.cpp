#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include <catch2/catch.hpp>

#include "../../temp_dir.hpp"
#include "protocol/curve_keys.hpp"
#include "packtune/error.hpp"

using namespace packtune;

TEST_CASE("only tcp on an address other than loopback reaches beyond this machine") {
  CHECK(reaches_beyond_this_machine("tcp://0.0.0.0:5555"));
  CHECK(reaches_beyond_this_machine("tcp://*:5555"));
  CHECK(reaches_beyond_this_machine("tcp://10.1.2.3:*"));
  CHECK(reaches_beyond_this_machine("tcp://eth0:5555"));
  CHECK_FALSE(reaches_beyond_this_machine("tcp://127.0.0.1:*"));
  CHECK_FALSE(reaches_beyond_this_machine("tcp://localhost:5555"));
  CHECK_FALSE(reaches_beyond_this_machine("tcp://[::1]:5555"));
  CHECK_FALSE(reaches_beyond_this_machine("ipc:///tmp/packtune.ipc"));
  CHECK_FALSE(reaches_beyond_this_machine("inproc://x"));
}

TEST_CASE("keys are made once, private keys for their owner only, and read back by each side") {
  const auto dir = std::filesystem::temp_directory_path() / ("packtune-keys-test-" + std::to_string(getpid()));
  std::filesystem::remove_all(dir);
  make_keys(dir.string());
  struct stat info {};
  REQUIRE(stat((dir / "actor.key").c_str(), &info) == 0);
  CHECK((info.st_mode & 0777) == 0600);
  CHECK_THROWS_AS(make_keys(dir.string()), InputError);  // never overwritten

  const auto driver = load_driver_keys(dir.string());
  const auto actor = load_actor_keys(dir.string());
  CHECK(driver.driver_public == actor.driver_public);
  CHECK(driver.authorized.count(actor.actor_public) == 1);
  CHECK(driver.driver_secret.size() == 40);
  CHECK(driver.driver_secret != driver.driver_public);

  // A malformed line in the allow list names the file and the line.
  std::ofstream(dir / "authorized_actors", std::ios::app) << "not-a-key\n";
  CHECK_THROWS_WITH(load_driver_keys(dir.string()), Catch::Contains("authorized_actors:3"));
  std::filesystem::remove(dir / "driver.key");
  CHECK_THROWS_WITH(load_driver_keys(dir.string()), Catch::Contains("packtune keys"));
  std::filesystem::remove_all(dir);
}

namespace {
unsigned mode_of(const std::filesystem::path& path) {
  struct stat info {};
  REQUIRE(lstat(path.c_str(), &info) == 0);
  return info.st_mode & 07777;
}
}  // namespace

TEST_CASE("packtune keys writes only new files, the owner's alone, into a new or empty folder") {
  testing::TempDir tmp;
  const auto fresh = tmp.path() / "fresh";
  make_keys(fresh.string());
  CHECK(mode_of(fresh) == 0700);
  for (const char* name : {"driver.key", "driver.pub", "actor.key", "actor.pub", "authorized_actors"}) {
    INFO(name);
    CHECK(mode_of(fresh / name) == 0600);
  }

  // An empty folder is used as it is: its mode is the user's choice.
  const auto empty = tmp.path() / "empty";
  std::filesystem::create_directory(empty);
  REQUIRE(chmod(empty.c_str(), 0755) == 0);
  make_keys(empty.string());
  CHECK(mode_of(empty) == 0755);
  CHECK(mode_of(empty / "actor.key") == 0600);

  // Anything else in it may be someone else's: nothing is written.
  const auto busy = tmp.path() / "busy";
  std::filesystem::create_directory(busy);
  std::ofstream(busy / "notes.txt") << "mine\n";
  CHECK_THROWS_WITH(make_keys(busy.string()), Catch::Contains("is not empty"));
  CHECK(std::distance(std::filesystem::directory_iterator(busy), std::filesystem::directory_iterator()) == 1);

  // A link where a key would go, even a dangling one, is not followed.
  const auto planted = tmp.path() / "planted";
  std::filesystem::create_directory(planted);
  std::filesystem::create_symlink(tmp.path() / "elsewhere", planted / "driver.key");
  CHECK_THROWS_WITH(make_keys(planted.string()), Catch::Contains("driver.key exists"));
  CHECK_FALSE(std::filesystem::exists(tmp.path() / "elsewhere"));

  // A link in the folder's place, or a file there, is not a folder to write into.
  std::filesystem::create_directory(tmp.path() / "target");
  std::filesystem::create_directory_symlink(tmp.path() / "target", tmp.path() / "link");
  CHECK_THROWS_WITH(make_keys((tmp.path() / "link").string()), Catch::Contains("is not a folder"));
  CHECK(std::filesystem::is_empty(tmp.path() / "target"));
  std::ofstream(tmp.path() / "file") << "x";
  CHECK_THROWS_AS(make_keys((tmp.path() / "file").string()), InputError);
  // Nor are missing parents made.
  CHECK_THROWS_WITH(make_keys((tmp.path() / "no" / "such").string()), Catch::Contains("cannot create"));
  CHECK_FALSE(std::filesystem::exists(tmp.path() / "no"));
}

TEST_CASE("key files others can read, or change, are refused as ssh refuses them, naming the fix") {
  testing::TempDir tmp;
  const auto dir = tmp.path() / "keys";
  make_keys(dir.string());
  CHECK_NOTHROW(load_driver_keys(dir.string()));
  CHECK_NOTHROW(load_actor_keys(dir.string()));

  // A secret key: no bit for group or others at all.
  REQUIRE(chmod((dir / "actor.key").c_str(), 0640) == 0);
  CHECK_THROWS_WITH(load_actor_keys(dir.string()),
                    (dir / "actor.key").string() + ": its permissions 0640 let others read it; run chmod 600 " +
                        (dir / "actor.key").string());
  REQUIRE(chmod((dir / "actor.key").c_str(), 0400) == 0);
  CHECK_NOTHROW(load_actor_keys(dir.string()));
  REQUIRE(chmod((dir / "driver.key").c_str(), 0604) == 0);
  CHECK_THROWS_WITH(load_driver_keys(dir.string()), Catch::Contains("chmod 600 " + (dir / "driver.key").string()));
  REQUIRE(chmod((dir / "driver.key").c_str(), 0600) == 0);

  // Public files may be read by all, not changed: another key there would be trusted.
  REQUIRE(chmod((dir / "driver.pub").c_str(), 0644) == 0);
  REQUIRE(chmod((dir / "authorized_actors").c_str(), 0644) == 0);
  CHECK_NOTHROW(load_driver_keys(dir.string()));
  REQUIRE(chmod((dir / "authorized_actors").c_str(), 0664) == 0);
  CHECK_THROWS_WITH(load_driver_keys(dir.string()),
                    Catch::Contains("authorized_actors: its permissions 0664 let others change it; run chmod 600"));
  REQUIRE(chmod((dir / "driver.pub").c_str(), 0646) == 0);
  CHECK_THROWS_WITH(load_actor_keys(dir.string()), Catch::Contains("driver.pub: its permissions 0646"));
}

TEST_CASE("a keys folder other users can write into is refused when keys are made and when they are read") {
  // Whoever can write into the folder can rename a key of their own over driver.pub or
  // authorized_actors, whatever those files' modes.
  testing::TempDir tmp;
  for (const mode_t mode : {0777, 0770, 01777}) {
    const auto open = tmp.path() / ("open-" + std::to_string(mode));
    std::filesystem::create_directory(open);
    REQUIRE(chmod(open.c_str(), mode) == 0);
    char text[8];
    std::snprintf(text, sizeof text, "%04o", static_cast<unsigned>(mode));
    CHECK_THROWS_WITH(make_keys(open.string()), "keys: " + open.string() + ": its permissions " + text +
                                                    " let other users write into it and replace the keys; run chmod "
                                                    "700 " + open.string());
    CHECK(std::filesystem::is_empty(open));
  }

  const auto dir = tmp.path() / "keys";
  make_keys(dir.string());
  REQUIRE(chmod(dir.c_str(), 0755) == 0);  // others may read the folder: the files guard themselves
  CHECK_NOTHROW(load_driver_keys(dir.string()));
  CHECK_NOTHROW(load_actor_keys(dir.string()));
  for (const mode_t mode : {0777, 0775, 0757}) {
    REQUIRE(chmod(dir.c_str(), mode) == 0);
    CHECK_THROWS_WITH(load_driver_keys(dir.string()), Catch::Contains(dir.string() + ": its permissions") &&
                                                          Catch::Contains("run chmod 700 " + dir.string()));
    CHECK_THROWS_WITH(load_actor_keys(dir.string()), Catch::Contains("let other users write into it"));
  }
  REQUIRE(chmod(dir.c_str(), 0700) == 0);
}
