#include <catch2/catch.hpp>

#include <filesystem>
#include <string>

#include "spec/checkpoint_name.hpp"

using namespace packtune::spec;

// The oracle is std::filesystem's filename(), which the driver used before.
TEST_CASE("file_name_of is std::filesystem's filename of a POSIX path") {
  for (const std::string path : {"/ckpt/trial-3-budget-1.h5", "trial-3-budget-1.h5", "/a/b/", "/", "", "a//b",
                                 "rel/dir/trial-12-budget-0.5.h5", "/dir.d/name", "..", "/x/.."}) {
    CAPTURE(path);
    CHECK(file_name_of(path) == std::filesystem::path(path).filename().string());
  }
  CHECK(parse_checkpoint_name(file_name_of(checkpoint_path("/ckpt", 7, 2.5)))->trial == 7);
}
