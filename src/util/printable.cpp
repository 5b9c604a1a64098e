#include "util/printable.hpp"

namespace packtune::util {

std::string printable(const std::string& text, std::size_t max_chars) {
  std::string out;
  for (std::size_t i = 0; i < text.size() && i < max_chars; ++i) {
    const char c = text[i];
    out += c >= 0x20 && c < 0x7f ? c : '?';
  }
  if (text.size() > max_chars) out += "...";
  return out;
}

}  // namespace packtune::util
