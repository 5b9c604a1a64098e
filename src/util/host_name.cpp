#include "util/host_name.hpp"

#include <unistd.h>

namespace packtune::util {

std::string host_name() {
  char buffer[256] = {};
  gethostname(buffer, sizeof buffer - 1);
  return buffer;
}

}  // namespace packtune::util
