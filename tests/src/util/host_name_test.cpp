#include <catch2/catch.hpp>

#include <fstream>
#include <string>

#include "util/host_name.hpp"

using namespace packtune;

TEST_CASE("the host name is the kernel's name of this machine") {
  const auto name = util::host_name();
  CHECK_FALSE(name.empty());
  std::ifstream kernel("/proc/sys/kernel/hostname");
  std::string expected;
  if (kernel >> expected) CHECK(name == expected);
}
