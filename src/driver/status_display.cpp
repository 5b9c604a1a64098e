#include "driver/status_display.hpp"

#include <sys/ioctl.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <spdlog/sinks/base_sink.h>
#include <spdlog/spdlog.h>

namespace packtune {

// Erases the table before each log line and draws it again after: log lines scroll above a
// table that stays at the bottom of the terminal.
class StatusDisplay::InterleavingSink : public spdlog::sinks::base_sink<std::mutex> {
 public:
  InterleavingSink(StatusDisplay& display, std::vector<std::shared_ptr<spdlog::sinks::sink>> sinks)
      : display_(display), sinks_(std::move(sinks)) {}

 protected:
  void sink_it_(const spdlog::details::log_msg& msg) override {
    std::lock_guard<std::mutex> lock(display_.mutex_);
    display_.erase_locked();
    for (auto& sink : sinks_) {
      if (sink->should_log(msg.level)) sink->log(msg);
    }
    for (auto& sink : sinks_) sink->flush();
    display_.draw_locked();
  }
  void flush_() override {
    for (auto& sink : sinks_) sink->flush();
  }

 private:
  StatusDisplay& display_;
  std::vector<std::shared_ptr<spdlog::sinks::sink>> sinks_;
};

namespace {

std::size_t terminal_width() {
  winsize size{};
  if (::ioctl(STDOUT_FILENO, TIOCGWINSZ, &size) == 0 && size.ws_col > 0) return size.ws_col;
  return 100;
}

}  // namespace

StatusDisplay::Mode StatusDisplay::choose(bool quiet) {
  if (quiet) return Mode::Quiet;
  const char* term = std::getenv("TERM");
  const bool dumb = term == nullptr || std::strcmp(term, "dumb") == 0;
  return ::isatty(STDOUT_FILENO) && !dumb ? Mode::Table : Mode::Lines;
}

StatusDisplay::StatusDisplay(Mode mode) : mode_(mode) {
  // The table at once; the first line after an interval, as every later one.
  last_shown_ = mode_ == Mode::Table ? Clock::time_point{} : Clock::now();
  auto logger = spdlog::default_logger();
  original_level_ = logger->level();
  // Quiet's console level is DriverLog's business: DIR/driver.log still takes every line.
  if (mode_ == Mode::Table) {
    // Log lines (spdlog's default logger writes to stdout) share the terminal with the table.
    // Sinks are swapped before the driver starts any thread that logs, and back after they end.
    original_sinks_ = logger->sinks();
    logger->sinks() = {std::make_shared<InterleavingSink>(*this, original_sinks_)};
    logger_changed_ = true;
  }
}

StatusDisplay::~StatusDisplay() { restore_logger(); }

void StatusDisplay::restore_logger() {
  if (!logger_changed_) return;
  auto logger = spdlog::default_logger();
  if (!original_sinks_.empty()) logger->sinks() = original_sinks_;
  logger->set_level(original_level_);
  logger_changed_ = false;
}

bool StatusDisplay::due(Clock::time_point now) const {
  if (mode_ == Mode::Quiet) return false;
  return now - last_shown_ >= (mode_ == Mode::Table ? std::chrono::seconds(1) : std::chrono::seconds(15));
}

void StatusDisplay::show(const StatusSnapshot& status, Clock::time_point now) {
  last_shown_ = now;
  if (mode_ == Mode::Lines) {
    spdlog::info("{}", render_status_line(status));
    return;
  }
  if (mode_ != Mode::Table) return;
  // One column short of the width: a line that fills it makes some terminals wrap.
  auto table = render_status_table(status, terminal_width() - 1);
  std::lock_guard<std::mutex> lock(mutex_);
  erase_locked();
  table_ = std::move(table);
  draw_locked();
}

void StatusDisplay::finish(const StatusSnapshot& status) {
  if (mode_ == Mode::Table) {
    auto table = render_status_table(status, terminal_width() - 1);
    std::lock_guard<std::mutex> lock(mutex_);
    erase_locked();
    table_ = std::move(table);
    draw_locked();
    drawn_ = 0;  // it stays
    table_.clear();
  }
  restore_logger();
}

void StatusDisplay::erase_locked() {
  if (drawn_ == 0) return;
  // To the start of the table's first line, then clear to the end of the screen.
  std::fprintf(stdout, "\x1b[%zuF\x1b[J", drawn_);
  std::fflush(stdout);
  drawn_ = 0;
}

void StatusDisplay::draw_locked() {
  for (const auto& line : table_) std::fprintf(stdout, "%s\n", line.c_str());
  std::fflush(stdout);
  drawn_ = table_.size();
}

}  // namespace packtune
