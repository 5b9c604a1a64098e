#include "driver/driver_log.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <mutex>

#include <spdlog/sinks/base_sink.h>
#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/spdlog.h>

#include "packtune/error.hpp"
#include "util/log_pattern.hpp"

namespace packtune {

namespace {

// The console's lines for a reader that is not a terminal (a file, a pipe, a batch job's log):
// held and written at each flush, as driver.log's are. spdlog's console sink writes each line
// through with an fflush, a write(2) per line: 2.5% of the driver's CPU at 10,000 actors
// (docs/benchmarks.md, Nodes). A terminal keeps spdlog's sink, and its colours.
class HeldConsoleSink final : public spdlog::sinks::base_sink<std::mutex> {
 public:
  explicit HeldConsoleSink(std::FILE* out) : out_(out) {}

 protected:
  void sink_it_(const spdlog::details::log_msg& msg) override { formatter_->format(msg, held_); }
  void flush_() override {
    if (held_.size() > 0) std::fwrite(held_.data(), 1, held_.size(), out_);
    std::fflush(out_);
    held_.clear();
  }

 private:
  std::FILE* out_;
  spdlog::memory_buf_t held_;
};

}  // namespace

DriverLog::DriverLog(const std::string& path, Console console) {
  // The file first: if it cannot be opened, the logger is left as it was.
  try {
    file_ = std::make_shared<spdlog::sinks::basic_file_sink_mt>(path, false);
  } catch (const spdlog::spdlog_ex& e) {
    throw Error("cannot write " + path + ": " + e.what());
  }
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
  // spdlog's default logger writes to stdout. A status table on a terminal wraps its sinks
  // (status_display.hpp), which stay.
  if (!::isatty(STDOUT_FILENO)) {
    held_ = std::make_shared<HeldConsoleSink>(stdout);
    util::use_log_pattern(*held_, util::kConsolePattern);
    held_->set_level(console_levels_.empty() ? shown : std::max(shown, console_levels_.front()));
    logger->sinks() = {held_};
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

void DriverLog::flush() {
  file_->flush();
  if (held_) held_->flush();
}

void DriverLog::write_through() {
  flush();
  spdlog::default_logger()->flush_on(spdlog::level::trace);
}

DriverLog::~DriverLog() {
  if (held_) held_->flush();
  try {
    file_->flush();
  } catch (const spdlog::spdlog_ex&) {
    // A full disk: the run's error says so already, and a destructor must not throw.
  }
  auto logger = spdlog::default_logger();
  auto& sinks = logger->sinks();
  if (held_) sinks = console_;
  sinks.erase(std::remove(sinks.begin(), sinks.end(), file_), sinks.end());
  for (std::size_t i = 0; i < console_.size(); ++i) console_[i]->set_level(console_levels_[i]);
  logger->set_level(logger_level_);
  logger->flush_on(flush_level_);
}

}  // namespace packtune
