#include "util/random_token.hpp"

#include <sys/random.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>

#include "packtune/error.hpp"

namespace packtune::util {

// getrandom(2) in one call: std::random_device opened the source anew for every token, which
// the driver paid 10,000 times over when as many actors joined at once.
std::string random_token() {
  std::uint8_t bytes[16];
  for (std::size_t got = 0; got < sizeof bytes;) {
    const auto n = ::getrandom(bytes + got, sizeof bytes - got, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw Error(std::string("cannot read the system's random source: ") + std::strerror(errno));
    got += static_cast<std::size_t>(n);
  }
  char text[33];
  for (std::size_t i = 0; i < sizeof bytes; ++i) std::snprintf(text + 2 * i, 3, "%02x", bytes[i]);
  return text;
}

}  // namespace packtune::util
