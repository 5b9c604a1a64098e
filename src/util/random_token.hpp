#pragma once
// A fresh secret of 32 hex digits from the system's random source: the token of the checkpoint
// store's `.store` file, and the one each actor's Welcome gives its transfer socket.
#include <string>

namespace packtune::util {

std::string random_token();

}  // namespace packtune::util
