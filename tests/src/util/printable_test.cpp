#include <catch2/catch.hpp>

#include "util/printable.hpp"

using packtune::util::printable;

TEST_CASE("outside text is shown as printable ASCII, cut to its length") {
  CHECK(printable("trial-0-budget-1.h5", 80) == "trial-0-budget-1.h5");
  CHECK(printable(std::string("a\nb\0c\x7f\xc3\xa9", 7), 80) == "a?b?c??");
  CHECK(printable(std::string(100, 'x'), 10) == std::string(10, 'x') + "...");
  CHECK(printable(std::string(10, 'x'), 10) == std::string(10, 'x'));
}
