#include "driver/driver_log.hpp"

#include <algorithm>

#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/spdlog.h>

#include "packtune/error.hpp"
#include "util/log_pattern.hpp"

namespace packtune {

DriverLog::DriverLog(const std::string& path, Console console) {
  auto logger = spdlog::default_logger();
  logger_level_ = logger->level();
  flush_level_ = logger->flush_level();
  const auto shown = console == Console::Quiet     ? spdlog::level::warn
                     : console == Console::Verbose ? spdlog::level::debug
                                                   : spdlog::level::info;
  console_ = logger->sinks();
  for (auto& sink : console_) {
    console_levels_.push_back(sink->level());
    sink->set_level(std::max(shown, sink->level()));
  }
  try {
    file_ = std::make_shared<spdlog::sinks::basic_file_sink_mt>(path, false);
  } catch (const spdlog::spdlog_ex& e) {
    throw Error("cannot write " + path + ": " + e.what());
  }
  // spdlog's default pattern for a file, with the message through %* (util/log_pattern.hpp).
  util::use_log_pattern(*file_, "[%Y-%m-%d %H:%M:%S.%e] [%l] %*");
  file_->set_level(spdlog::level::debug);
  logger->sinks().push_back(file_);
  logger->set_level(std::min(logger_level_, spdlog::level::debug));
  // Warnings and errors are written through at once; the rest at each flush(), which the
  // driver's loop calls with every journal commit: a driver killed with -9 loses at most
  // the lines of its last 10 ms, as the journal does. Written through line by line, the
  // lines of 10,000 actors' jobs took a write(2) each.
  logger->flush_on(spdlog::level::warn);
}

void DriverLog::flush() { file_->flush(); }

DriverLog::~DriverLog() {
  auto logger = spdlog::default_logger();
  auto& sinks = logger->sinks();
  sinks.erase(std::remove(sinks.begin(), sinks.end(), file_), sinks.end());
  for (std::size_t i = 0; i < console_.size(); ++i) console_[i]->set_level(console_levels_[i]);
  logger->set_level(logger_level_);
  logger->flush_on(flush_level_);
}

}  // namespace packtune
