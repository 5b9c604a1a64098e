#pragma once
// `packtune plan CONFIG [--trials N] [--actors SPEC] [--json]`: the planner's packing of the
// first rung's trials onto actors, without training anything.
#include <string>
#include <vector>

namespace packtune::cli {

int run_plan_command(const std::vector<std::string>& args);

}  // namespace packtune::cli
