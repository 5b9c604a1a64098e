#pragma once
// `packtune profile [--json] | --clear [--device TEXT]`: the throughput profile cache
// (driver/profile_cache.hpp), shown or emptied. Needs no actor.
#include <string>
#include <vector>

namespace packtune::cli {

// `args` are the arguments after "profile". Prints to stdout and returns the exit status; bad
// input throws packtune::InputError for the caller to print as one line.
int run_profile_command(const std::vector<std::string>& args);

}  // namespace packtune::cli
