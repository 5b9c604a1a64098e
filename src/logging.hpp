#pragma once
// Logging for the files that include LibTorch. LibTorch 2.x ships fmt 12 in its include folder,
// ahead of the system's fmt 9 that Debian's spdlog is built with, so spdlog does not compile
// next to it: these functions take spdlog's format strings and hand the finished text to
// logging.cpp, the only file that includes spdlog for them and never sees LibTorch's headers.
// Fields are {} or {:spec}, spec being [[fill]align][width][.precision][type] with align one
// of < > ^ and type one of f e g (floating point) d s (no effect); {{ and }} are braces.
#include <ios>
#include <sstream>
#include <string>
#include <string_view>
#include <type_traits>

namespace packtune::logging {

enum class Level { debug, info, warn, error };

// Writes one line through spdlog's default logger.
void write(Level level, const std::string& message);

namespace detail {

struct Spec {
  char fill = ' ';
  char align = 0;  // 0: right for numbers, left for the rest, as in fmt
  int width = 0;
  int precision = -1;
  char type = 0;
};

// Copies the literal text of `pattern` from `pos` to the next field into `out` and parses the
// field into `spec`, leaving `pos` after it. False when the pattern has no field left; the
// rest of the text is then in `out`.
bool next_field(std::string_view pattern, std::size_t& pos, std::string& out, Spec& spec);
void set_float_format(std::ostream& stream, const Spec& spec);
void append_padded(std::string& out, const Spec& spec, const std::string& text, bool number);

template <class T>
void append(std::string& out, std::string_view pattern, std::size_t& pos, const T& value) {
  Spec spec;
  if (!next_field(pattern, pos, out, spec)) return;  // more arguments than fields: fmt drops them
  std::ostringstream text;
  text << std::boolalpha;
  set_float_format(text, spec);
  text << value;
  append_padded(out, spec, text.str(), std::is_arithmetic_v<T> && !std::is_same_v<T, bool>);
}

}  // namespace detail

template <class... Args>
std::string format(std::string_view pattern, const Args&... args) {
  std::string out;
  std::size_t pos = 0;
  (detail::append(out, pattern, pos, args), ...);
  detail::Spec unused;
  while (detail::next_field(pattern, pos, out, unused)) out += "{}";  // fewer arguments than fields
  return out;
}

template <class... Args>
void debug(std::string_view pattern, const Args&... args) {
  write(Level::debug, format(pattern, args...));
}
template <class... Args>
void info(std::string_view pattern, const Args&... args) {
  write(Level::info, format(pattern, args...));
}
template <class... Args>
void warn(std::string_view pattern, const Args&... args) {
  write(Level::warn, format(pattern, args...));
}
template <class... Args>
void error(std::string_view pattern, const Args&... args) {
  write(Level::error, format(pattern, args...));
}

}  // namespace packtune::logging
