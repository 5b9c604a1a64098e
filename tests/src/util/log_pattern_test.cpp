#include <catch2/catch.hpp>

#include <random>
#include <sstream>

#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include "util/log_pattern.hpp"

using namespace packtune;

TEST_CASE("a logged message cannot break its line, move the terminal or grow past the bound") {
  CHECK(util::loggable("host\n[12:00:00] info forged\r\x1b[2J\x07\x7f end") == "host?[12:00:00] info forged??[2J?? end");
  CHECK(util::loggable("a\tb caf\xc3\xa9") == "a\tb caf\xc3\xa9");  // tabs and UTF-8 stay
  const std::string huge(100'000, 'A');
  const auto cut = util::loggable(huge);
  CHECK(cut == std::string(util::kMaxLogMessage, 'A') + "... (" + std::to_string(100'000 - util::kMaxLogMessage) +
                   " more bytes)");
}

// Every byte against the rule itself, one at a time: the runs appended whole change nothing.
TEST_CASE("loggable() keeps every byte but C0 controls (tab aside) and DEL, in random messages") {
  std::mt19937 rng(7);
  for (int round = 0; round < 2000; ++round) {
    std::string message(rng() % 64, ' ');
    for (auto& c : message) c = static_cast<char>(rng() % 4 == 0 ? rng() % 0x20 : rng() % 256);
    std::string expected;
    for (const char c : message) {
      const auto b = static_cast<unsigned char>(c);
      expected += (b < 0x20 && b != '\t') || b == 0x7f ? '?' : c;
    }
    REQUIRE(util::loggable(message) == expected);
  }
}

TEST_CASE("the pattern's %* writes one line per call, whatever the message holds") {
  std::ostringstream out;
  auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(out);
  util::use_log_pattern(*sink, "[%l] %*");
  spdlog::logger logger("test", sink);
  logger.warn("joined from {}", "evil\n[info] FORGED\x1b[31m");
  logger.info("plain");
  CHECK(out.str() == "[warning] joined from evil?[info] FORGED?[31m\n[info] plain\n");
}
