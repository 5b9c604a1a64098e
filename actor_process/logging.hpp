#pragma once
// Logging for the files that include LibTorch. LibTorch 2.x ships fmt 12 in its include folder,
// ahead of the system's fmt 9 that Debian's spdlog is built with, so spdlog does not compile
// next to it. These functions format with whichever fmt the file sees (LibTorch's, header-only,
// or the system's) and hand the finished line to logging.cpp, the only file that includes
// spdlog for them and never sees LibTorch's headers. fmt's inline namespaces (v9, v12) keep the
// two versions apart in one binary.
#include <string>
#include <utility>

#include <fmt/format.h>

namespace packtune::actor_process::logging {

enum class Level { debug, info, warn, error };

// Writes one line through spdlog's default logger.
void write(Level level, const std::string& message);

template <class... Args>
void debug(fmt::format_string<Args...> pattern, Args&&... args) {
  write(Level::debug, fmt::format(pattern, std::forward<Args>(args)...));
}
template <class... Args>
void info(fmt::format_string<Args...> pattern, Args&&... args) {
  write(Level::info, fmt::format(pattern, std::forward<Args>(args)...));
}
template <class... Args>
void warn(fmt::format_string<Args...> pattern, Args&&... args) {
  write(Level::warn, fmt::format(pattern, std::forward<Args>(args)...));
}
template <class... Args>
void error(fmt::format_string<Args...> pattern, Args&&... args) {
  write(Level::error, fmt::format(pattern, std::forward<Args>(args)...));
}

}  // namespace packtune::actor_process::logging
