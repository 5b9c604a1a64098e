#pragma once
// `packtune node --driver ENDPOINT [options]`: starts and supervises this machine's actors
// for a driver elsewhere (node/node_agent.hpp).
#include <string>
#include <vector>

namespace packtune::cli {

// `args` are the arguments after "node"; returns the exit status.
int run_node_command(const std::vector<std::string>& args);

}  // namespace packtune::cli
