#pragma once
// The table of `packtune`'s commands: each one's name, the lines `packtune --help` shows for
// it, and the function that runs it. main.cpp dispatches by it and prints its usage text.
#include <string>
#include <utility>
#include <vector>

namespace packtune::cli {

struct Command {
  const char* name;
  // Synopsis and summary, one pair a line of the usage text; none: a hidden command.
  std::vector<std::pair<const char*, const char*>> usage;
  // `program` is argv[0]; `args` the arguments after the command's name. Returns the exit status.
  int (*run)(const std::string& program, const std::vector<std::string>& args);
};

const std::vector<Command>& commands();

// `packtune --help`: the commands' lines, in the table's order.
std::string usage_text();

}  // namespace packtune::cli
