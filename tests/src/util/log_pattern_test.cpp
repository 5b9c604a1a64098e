#include <catch2/catch.hpp>

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

TEST_CASE("the pattern's %* writes one line per call, whatever the message holds") {
  std::ostringstream out;
  auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(out);
  util::use_log_pattern(*sink, "[%l] %*");
  spdlog::logger logger("test", sink);
  logger.warn("joined from {}", "evil\n[info] FORGED\x1b[31m");
  logger.info("plain");
  CHECK(out.str() == "[warning] joined from evil?[info] FORGED?[31m\n[info] plain\n");
}
