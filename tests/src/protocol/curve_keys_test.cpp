#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <catch2/catch.hpp>

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
