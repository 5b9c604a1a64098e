#pragma once
// The pattern of every log line packtune writes. Messages carry text from outside: peers' host
// names and errors, file names, a plugin's exception. Printed as it is (spdlog's %v), such text
// could start a line of its own that looks like packtune's ("\n[12:00:00] info ..."), move the
// terminal's cursor or ring its bell, or make one line of megabytes. The flag %* prints the
// message with every control character but the tab shown as '?', cut at kMaxLogMessage bytes:
// whatever a caller forgot to clean, one call is one line (docs/security.md).
#include <cstddef>
#include <string>
#include <string_view>

namespace spdlog::sinks {
class sink;
}

namespace packtune::util {

constexpr std::size_t kMaxLogMessage = 4096;

// The console's pattern (every command's); driver.log's adds the date.
inline constexpr const char* kConsolePattern = "[%H:%M:%S] %^%l%$ %*";

// The message as %* writes it.
std::string loggable(std::string_view message);

// Sets `pattern` (spdlog's flags, with %* for the message) on every sink of spdlog's default
// logger, or on one sink.
void use_log_pattern(const std::string& pattern);
void use_log_pattern(spdlog::sinks::sink& sink, const std::string& pattern);

}  // namespace packtune::util
