#pragma once
// Where the status of a running experiment goes. On a terminal: a table on stdout, redrawn in
// place every second, with log lines printed above it as they come — the table is
// erased, the line written, the table drawn again. Elsewhere (CI, Slurm output, a pipe): one
// plain line every 15 s among the log lines. Quiet: nothing but warnings.
#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <spdlog/common.h>

#include "driver/status_view.hpp"

namespace spdlog::sinks {
class sink;
}

namespace packtune {

class StatusDisplay {
 public:
  enum class Mode { Table, Lines, Quiet };
  using Clock = std::chrono::steady_clock;

  // Table when stdout is a terminal (and TERM is not "dumb"), Lines otherwise; Quiet when asked.
  static Mode choose(bool quiet);

  explicit StatusDisplay(Mode mode);
  ~StatusDisplay();
  StatusDisplay(const StatusDisplay&) = delete;
  StatusDisplay& operator=(const StatusDisplay&) = delete;

  Mode mode() const { return mode_; }
  // Whether a new status is due: every second for the table, every 15 s for lines.
  bool due(Clock::time_point now) const;
  void show(const StatusSnapshot& status, Clock::time_point now);
  // The last table stays on the screen, and log lines go straight to the terminal again.
  void finish(const StatusSnapshot& status);

 private:
  class InterleavingSink;
  void draw_locked();
  void erase_locked();
  void restore_logger();

  Mode mode_;
  std::mutex mutex_;  // the table's lines and the terminal, shared with the log sink
  std::vector<std::string> table_;
  std::size_t drawn_ = 0;  // lines of the table on the screen now
  Clock::time_point last_shown_{};
  std::vector<std::shared_ptr<spdlog::sinks::sink>> original_sinks_;
  spdlog::level::level_enum original_level_ = spdlog::level::info;
  bool logger_changed_ = false;
};

}  // namespace packtune
