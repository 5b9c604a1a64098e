#pragma once
// `packtune keys DIR`: CURVE keys for a driver and the actors on other machines that join it
// (protocol/curve_keys.hpp).
#include <string>
#include <vector>

namespace packtune::cli {

// `args` are the arguments after "keys"; returns the exit status.
int run_keys_command(const std::vector<std::string>& args);

}  // namespace packtune::cli
