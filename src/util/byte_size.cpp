#include "util/byte_size.hpp"

#include <cctype>
#include <cmath>
#include <cstdlib>

#include "packtune/error.hpp"

namespace packtune::util {

std::int64_t parse_byte_size(const std::string& text, const std::string& where) {
  const char* begin = text.c_str();
  char* end = nullptr;
  const double value = std::strtod(begin, &end);
  const std::string unit(end);
  double scale = 0;
  if (unit.empty() || unit == "B") scale = 1;
  else if (unit == "KiB") scale = 1024.0;
  else if (unit == "MiB") scale = 1024.0 * 1024;
  else if (unit == "GiB") scale = 1024.0 * 1024 * 1024;
  else if (unit == "TiB") scale = 1024.0 * 1024 * 1024 * 1024;
  else if (unit == "KB") scale = 1e3;
  else if (unit == "MB") scale = 1e6;
  else if (unit == "GB") scale = 1e9;
  else if (unit == "TB") scale = 1e12;
  // strtod also reads hexadecimal, "inf" and leading blanks: none is a size a user means.
  const std::string number(begin, static_cast<std::size_t>(end - begin));
  const bool plain = !number.empty() && (std::isdigit(static_cast<unsigned char>(number[0])) || number[0] == '.') &&
                     number.find_first_of("xX") == std::string::npos;
  // Past 2^62 bytes llround's result is unspecified: such a figure is garbage, not a device.
  if (!plain || end == begin || scale == 0 || !std::isfinite(value) || value * scale < 1 || value * scale > 4.6e18) {
    throw InputError(where + ": \"" + text + "\" is not a memory size; expected a positive number with a unit, e.g. 600MiB or 16GiB");
  }
  return static_cast<std::int64_t>(std::llround(value * scale));
}

}  // namespace packtune::util
