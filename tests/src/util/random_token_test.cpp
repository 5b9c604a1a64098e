#include <catch2/catch.hpp>

#include <set>

#include "util/random_token.hpp"

TEST_CASE("a random token is 32 hex digits, and tokens differ") {
  std::set<std::string> seen;
  for (int i = 0; i < 100; ++i) {
    const auto token = packtune::util::random_token();
    REQUIRE(token.size() == 32);
    CHECK(token.find_first_not_of("0123456789abcdef") == std::string::npos);
    seen.insert(token);
  }
  CHECK(seen.size() == 100);
}
