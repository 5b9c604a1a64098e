#pragma once
// `packtune run CONFIG [--out DIR] [overrides]` and `packtune run --resume DIR`: a tuning
// experiment, the driver and its local actors, started afresh or continued from its journal.
#include <string>
#include <vector>

namespace packtune::cli {

// `args` are the arguments after "run"; returns the exit status.
int run_run_command(const std::vector<std::string>& args);

}  // namespace packtune::cli
