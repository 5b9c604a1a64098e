#pragma once
// Where the driver's log lines go while a run holds its results folder. The console gets what
// a user acts on: the experiment line, where the charts are, warnings, errors and results
// (info and above; warnings only with --quiet). DIR/driver.log gets every line, the planner's
// and profiler's workings (debug) too, and --verbose shows those on the console as well.
// driver.log, and a console that is not a terminal, take lines at each flush(); a terminal
// takes each as it comes, and warnings and errors go out at once everywhere.
#include <memory>
#include <string>
#include <vector>

#include <spdlog/common.h>

namespace spdlog::sinks {
class sink;
}

namespace packtune {

class DriverLog {
 public:
  enum class Console { Quiet, Normal, Verbose };

  // Appends to `path` (a resumed run continues the file); restores the logger when it ends.
  DriverLog(const std::string& path, Console console);
  ~DriverLog();
  // Writes the lines logged since the last flush (warnings and errors are written at once).
  void flush();
  // From now on every line goes out as it is logged: the run's summary, printed to stdout,
  // interleaves with log lines.
  void write_through();
  DriverLog(const DriverLog&) = delete;
  DriverLog& operator=(const DriverLog&) = delete;

 private:
  std::vector<std::shared_ptr<spdlog::sinks::sink>> console_;
  std::vector<spdlog::level::level_enum> console_levels_;
  std::shared_ptr<spdlog::sinks::sink> file_;
  std::shared_ptr<spdlog::sinks::sink> held_;  // the console's lines when it is not a terminal
  spdlog::level::level_enum logger_level_;
  spdlog::level::level_enum flush_level_;
};

}  // namespace packtune
