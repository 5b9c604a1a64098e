#include <catch2/catch.hpp>

#include "logging.hpp"

using packtune::logging::format;

TEST_CASE("log messages take spdlog's format strings") {
  CHECK(format("actor {}: trial {} failed: {}", 2, 17, std::string("nan loss")) ==
        "actor 2: trial 17 failed: nan loss");
  CHECK(format("{:.2f} s, {:.1f} MiB", 1.23456, 10.0) == "1.23 s, 10.0 MiB");
  CHECK(format("budget {:g}, lr {}", 0.5, 0.001) == "budget 0.5, lr 0.001");
  CHECK(format("budget {:g}", 3.0) == "budget 3");
  CHECK(format("[{:>4}|{:<4}|{:^5}|{:*>3}]", 7, "ab", "x", 1) == "[   7|ab  |  x  |**1]");
  CHECK(format("{:>3} {}", "a", true) == "  a true");
  CHECK(format("{{literal}} {}", 1) == "{literal} 1");
}

TEST_CASE("a format string and its arguments that do not match still give a message") {
  CHECK(format("only {}", 1, 2) == "only 1");
  CHECK(format("{} and {}", 1) == "1 and {}");
  CHECK(format("unclosed {", 1) == "unclosed {");
}
