#include "cli/config_command.hpp"

#include <iostream>

#include <boost/program_options.hpp>

#include "util/subcommand.hpp"
#include "experiment/config_keys.hpp"
#include "packtune/error.hpp"

namespace packtune::cli {

int run_config_command(const std::vector<std::string>& args) {
  util::Subcommand command("config", "packtune config --markdown");
  command.options()("markdown", "print the config's keys as docs/config.md");
  if (!command.parse(args)) return 0;
  command.require("markdown", "--markdown");
  std::cout << config_table::markdown();
  return 0;
}

}  // namespace packtune::cli
