#include "util/random_token.hpp"

#include <cstdio>
#include <random>

namespace packtune::util {

std::string random_token() {
  std::random_device rd;
  char text[33];
  for (int i = 0; i < 4; ++i) std::snprintf(text + 8 * i, 9, "%08x", rd());
  return text;
}

}  // namespace packtune::util
