// packtune: the command-line entry point. It dispatches to the commands of cli/commands.hpp;
// every error becomes one line on stderr and an exit code: 2 for bad input, 1 for any other
// failure.
#include <iostream>
#include <string>
#include <vector>

#include <spdlog/spdlog.h>

#include "cli/commands.hpp"
#include "packtune/error.hpp"
#include "util/log_pattern.hpp"
#include "util/printable.hpp"
#include "util/subcommand.hpp"

int main(int argc, char** argv) {
  packtune::util::use_log_pattern(packtune::util::kConsolePattern);
  const auto usage = packtune::cli::usage_text();
  if (argc < 2) {
    std::cerr << usage;
    return 2;
  }
  const std::string command = argv[1];
  const std::vector<std::string> args(argv + 2, argv + argc);
  return packtune::util::exit_code_of([&]() -> int {
    for (const auto& c : packtune::cli::commands()) {
      if (command == c.name) return c.run(argv[0], args);
    }
    if (command == "--help" || command == "-h" || command == "help") {
      std::cout << usage;
      return 0;
    }
    throw packtune::InputError("unknown command \"" + packtune::util::printable(command, 80) +
                               "\"; `packtune --help` lists the commands");
  });
}
