#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>

#include "../../temp_dir.hpp"
#include "driver/profile_cache.hpp"
#include "packtune/error.hpp"

using namespace packtune;
using Entry = ProfileCache::Entry;

namespace {

const ProfileCache::Context h200{"NVIDIA H200", "LibTorch 2.15.0, CUDA 13.0", "images 1x28x28, 10 classes, order shared"};
const ProfileCache::Context cpu{"Intel Xeon, 2 threads", "LibTorch 1.13.1", "images 1x28x28, 10 classes, order shared"};

Entry entry(const ProfileCache::Context& context, const std::string& shape, std::vector<std::pair<int, double>> points,
            int max_members = 8) {
  return {context, shape, std::move(points), max_members, "2026-11-28T18:00:00Z"};
}

void write(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

}  // namespace

TEST_CASE("a stored profile is found by a later cache of the same folder, under its own context only") {
  packtune::testing::TempDir dir;
  const auto folder = dir.file("cache");  // made by the first store
  {
    ProfileCache first(folder);
    CHECK(first.open().empty());  // no file yet: an empty cache, not an error
    CHECK(first.store(entry(h200, "resnet/s3x2/c16", {{1, 0.003}, {2, 0.004}, {4, 0.007}})).empty());
  }
  ProfileCache later(folder);
  REQUIRE(later.open().empty());
  const auto found = later.find(h200, "resnet/s3x2/c16", 8);
  REQUIRE(found);
  CHECK(found->points == std::vector<std::pair<int, double>>{{1, 0.003}, {2, 0.004}, {4, 0.007}});
  CHECK(found->measured == "2026-11-28T18:00:00Z");
  // Another device, build or data is another profile.
  CHECK_FALSE(later.find(cpu, "resnet/s3x2/c16", 8));
  auto other_data = h200;
  other_data.data = "images 3x32x32, 10 classes, order shared";
  CHECK_FALSE(later.find(other_data, "resnet/s3x2/c16", 8));
  auto other_build = h200;
  other_build.build = "LibTorch 2.16.0, CUDA 13.0";
  CHECK_FALSE(later.find(other_build, "resnet/s3x2/c16", 8));
  CHECK_FALSE(later.find(h200, "resnet/s3x2/c32", 8));
  // An actor that names no context is never served from the cache.
  CHECK_FALSE(later.find({}, "resnet/s3x2/c16", 8));
}

TEST_CASE("a profile that reached its run's largest unit does not speak for larger units") {
  packtune::testing::TempDir dir;
  ProfileCache cache(dir.file("cache"));
  // Timed up to 4, the limit: 8 was never tried.
  cache.store(entry(h200, "mlp-256", {{1, 0.001}, {2, 0.0011}, {4, 0.0012}}, 4));
  CHECK(cache.find(h200, "mlp-256", 4));
  CHECK(cache.find(h200, "mlp-256", 2));
  CHECK_FALSE(cache.find(h200, "mlp-256", 8));
  // Stopped at 2 under a limit of 8: throughput saturated there, whatever a run allows.
  cache.store(entry(h200, "cnn-32", {{1, 0.002}, {2, 0.004}}, 8));
  CHECK(cache.find(h200, "cnn-32", 32));
}

TEST_CASE("runs that share a cache keep each other's profiles, and one shape's newer profile replaces its older") {
  packtune::testing::TempDir dir;
  ProfileCache a(dir.file("cache")), b(dir.file("cache"));
  a.open();
  b.open();  // both read the empty cache before either writes
  a.store(entry(h200, "mlp-256", {{1, 0.001}}));
  b.store(entry(h200, "mlp-512", {{1, 0.002}}));
  b.store(entry(h200, "mlp-256", {{1, 0.0015}, {2, 0.0016}}));
  ProfileCache c(dir.file("cache"));
  REQUIRE(c.open().empty());
  REQUIRE(c.entries().size() == 2);
  CHECK(c.find(h200, "mlp-512", 8)->points.size() == 1);
  CHECK(c.find(h200, "mlp-256", 8)->points == std::vector<std::pair<int, double>>{{1, 0.0015}, {2, 0.0016}});
}

TEST_CASE("a damaged cache file is a miss that names the file, and the next store replaces it") {
  packtune::testing::TempDir dir;
  const auto folder = dir.file("cache");
  std::filesystem::create_directories(folder);
  ProfileCache cache(folder);
  const std::vector<std::string> damaged = {
      "{not json",
      R"({"format": 2, "profiles": []})",
      R"({"format": 1})",
      R"({"format": 1, "profiles": [{"device_model": "x", "build": "y", "data": "z", "shape": "s", "max_members": 4,
          "points": [[1, -0.5]]}]})",
      R"({"format": 1, "profiles": [{"device_model": "x", "build": "y", "data": "z", "shape": "s", "max_members": 4,
          "points": [[0, 0.5]]}]})",
      R"({"format": 1, "profiles": [{"device_model": "x", "shape": "s", "max_members": 4, "points": [[1, 0.5]]}]})",
  };
  for (const auto& text : damaged) {
    INFO(text);
    write(cache.file(), text);
    const auto why = cache.open();
    CHECK_THAT(why, Catch::Contains(cache.file()));
    CHECK(cache.entries().empty());
  }
  CHECK(cache.store(entry(cpu, "mlp-64", {{1, 0.01}})).empty());
  ProfileCache again(folder);
  CHECK(again.open().empty());
  CHECK(again.entries().size() == 1);
}

TEST_CASE("clear removes the profiles of the devices named, or all of them") {
  packtune::testing::TempDir dir;
  ProfileCache cache(dir.file("cache"));
  cache.store(entry(h200, "mlp-256", {{1, 0.001}}));
  cache.store(entry(cpu, "mlp-256", {{1, 0.01}}));
  cache.store(entry(h200, "mlp-512", {{1, 0.002}}));
  CHECK(cache.clear("H200") == 2);
  ProfileCache after(dir.file("cache"));
  REQUIRE(after.open().empty());
  REQUIRE(after.entries().size() == 1);
  CHECK(after.entries().front().context.device_model == cpu.device_model);
  CHECK(after.clear("") == 1);
  CHECK_FALSE(std::filesystem::exists(after.file()));
  CHECK(after.clear("") == 0);  // nothing there: nothing to do
}

TEST_CASE("the cache folder is PACKTUNE_CACHE_DIR, else XDG_CACHE_HOME's, else the home's") {
  auto keep = [](const char* name) {
    const char* v = std::getenv(name);
    return std::make_pair(std::string(name), v ? std::optional<std::string>(v) : std::nullopt);
  };
  const auto saved = {keep("PACKTUNE_CACHE_DIR"), keep("XDG_CACHE_HOME"), keep("HOME")};
  setenv("HOME", "/home/u", 1);
  setenv("XDG_CACHE_HOME", "/xdg", 1);
  setenv("PACKTUNE_CACHE_DIR", "/mine", 1);
  CHECK(ProfileCache::default_dir() == "/mine");
  unsetenv("PACKTUNE_CACHE_DIR");
  CHECK(ProfileCache::default_dir() == "/xdg/packtune");
  setenv("XDG_CACHE_HOME", "", 1);
  CHECK(ProfileCache::default_dir() == "/home/u/.cache/packtune");
  unsetenv("XDG_CACHE_HOME");
  unsetenv("HOME");
  CHECK(ProfileCache::default_dir().empty());
  for (const auto& [name, value] : saved) {
    if (value) {
      setenv(name.c_str(), value->c_str(), 1);
    } else {
      unsetenv(name.c_str());
    }
  }
}
