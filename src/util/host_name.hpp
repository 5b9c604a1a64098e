#pragma once
// This machine's name, as nodes and actors tell the driver (NodeHello, Hello) and the driver
// names its own machine in the status display.
#include <string>

namespace packtune::util {

// gethostname(2)'s answer; empty when the system has none.
std::string host_name();

}  // namespace packtune::util
