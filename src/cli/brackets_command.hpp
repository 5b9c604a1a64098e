#pragma once
// `packtune brackets --tuner hyperband --min-budget m --max-budget M --eta E [--json]`:
// Hyperband's schedule, which needs no actor, network or model.
#include <string>
#include <vector>

namespace packtune::cli {

// `args` are the arguments after "brackets". Prints to stdout and returns the exit status; bad
// input throws packtune::InputError for the caller to print as one line.
int run_brackets_command(const std::vector<std::string>& args);

}  // namespace packtune::cli
