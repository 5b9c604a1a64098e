#include "logging.hpp"

#include <cctype>
#include <iomanip>

#include <spdlog/spdlog.h>

namespace packtune::logging {

void write(Level level, const std::string& message) {
  switch (level) {
    case Level::debug: spdlog::debug("{}", message); break;
    case Level::info: spdlog::info("{}", message); break;
    case Level::warn: spdlog::warn("{}", message); break;
    case Level::error: spdlog::error("{}", message); break;
  }
}

namespace detail {
namespace {

bool is_align(char c) { return c == '<' || c == '>' || c == '^'; }

int read_number(std::string_view s, std::size_t& i) {
  int n = 0;
  while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) n = n * 10 + (s[i++] - '0');
  return n;
}

Spec parse_spec(std::string_view s) {
  Spec spec;
  std::size_t i = 0;
  if (s.size() >= 2 && is_align(s[1])) {
    spec.fill = s[0];
    spec.align = s[1];
    i = 2;
  } else if (!s.empty() && is_align(s[0])) {
    spec.align = s[0];
    i = 1;
  }
  spec.width = read_number(s, i);
  if (i < s.size() && s[i] == '.') {
    ++i;
    spec.precision = read_number(s, i);
  }
  if (i < s.size()) spec.type = s[i];
  return spec;
}

}  // namespace

bool next_field(std::string_view pattern, std::size_t& pos, std::string& out, Spec& spec) {
  while (pos < pattern.size()) {
    const char c = pattern[pos];
    const bool doubled = pos + 1 < pattern.size() && pattern[pos + 1] == c;
    if ((c == '{' || c == '}') && doubled) {
      out += c;
      pos += 2;
    } else if (c == '{') {
      const auto close = pattern.find('}', pos);
      if (close == std::string_view::npos) break;  // an unclosed brace is literal text
      auto field = pattern.substr(pos + 1, close - pos - 1);
      const auto colon = field.find(':');
      spec = colon == std::string_view::npos ? Spec{} : parse_spec(field.substr(colon + 1));
      pos = close + 1;
      return true;
    } else {
      out += c;
      ++pos;
    }
  }
  out.append(pattern.substr(std::min(pos, pattern.size())));
  pos = pattern.size();
  return false;
}

void set_float_format(std::ostream& stream, const Spec& spec) {
  if (spec.type == 'f') stream << std::fixed;
  if (spec.type == 'e') stream << std::scientific;
  if (spec.precision >= 0) stream << std::setprecision(spec.precision);
  else if (spec.type == 'f' || spec.type == 'e') stream << std::setprecision(6);
}

void append_padded(std::string& out, const Spec& spec, const std::string& text, bool number) {
  const auto pad = spec.width > static_cast<int>(text.size()) ? spec.width - text.size() : 0;
  const char align = spec.align != 0 ? spec.align : (number ? '>' : '<');
  const auto before = align == '>' ? pad : align == '^' ? pad / 2 : 0;
  out.append(before, spec.fill);
  out += text;
  out.append(pad - before, spec.fill);
}

}  // namespace detail
}  // namespace packtune::logging
