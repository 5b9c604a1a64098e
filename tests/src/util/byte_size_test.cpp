#include <catch2/catch.hpp>

#include "packtune/error.hpp"
#include "util/byte_size.hpp"

using namespace packtune;
using util::parse_byte_size;

TEST_CASE("memory sizes parse with binary and decimal units") {
  CHECK(parse_byte_size("600MiB", "x") == 600LL << 20);
  CHECK(parse_byte_size("16GiB", "x") == 16LL << 30);
  CHECK(parse_byte_size("1.5GB", "x") == 1500000000LL);
  CHECK(parse_byte_size("4096", "x") == 4096);
  CHECK_THROWS_AS(parse_byte_size("lots", "x"), InputError);
  CHECK_THROWS_AS(parse_byte_size("5parsecs", "x"), InputError);
  CHECK_THROWS_AS(parse_byte_size("-1MiB", "x"), InputError);
}

TEST_CASE("every unit a memory size may have, and what is not a size a user means") {
  CHECK(parse_byte_size("7B", "x") == 7);
  CHECK(parse_byte_size("2KiB", "x") == 2048);
  CHECK(parse_byte_size("1TiB", "x") == 1LL << 40);
  CHECK(parse_byte_size("3KB", "x") == 3000);
  CHECK(parse_byte_size("2MB", "x") == 2000000);
  CHECK(parse_byte_size("1TB", "x") == 1000000000000LL);
  CHECK(parse_byte_size(".5KiB", "x") == 512);
  for (const char* bad : {"", "MiB", "0", "0.1B", "0x10MiB", " 600MiB", "+600MiB", "inf", "nanGiB", "1e300TiB",
                          "9e18", "16 GiB", "16gib"}) {
    INFO(bad);
    CHECK_THROWS_AS(parse_byte_size(bad, "x"), InputError);
  }
  CHECK_THROWS_WITH(parse_byte_size("lots", "actor_memory"),
                    "actor_memory: \"lots\" is not a memory size; expected a positive number with a unit, e.g. "
                    "600MiB or 16GiB");
}
