#pragma once
// Text from outside (a peer's message, a command-line value) as one line of a log or an error
// shows it: printable ASCII only, each other byte a '?', cut to `max_chars` with "..." after.
#include <cstddef>
#include <string>

namespace packtune::util {

std::string printable(const std::string& text, std::size_t max_chars);

}  // namespace packtune::util
