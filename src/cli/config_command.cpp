#include "cli/config_command.hpp"

#include <iostream>

#include <boost/program_options.hpp>

#include "cli/command_line.hpp"
#include "experiment/config_keys.hpp"
#include "packtune/error.hpp"

namespace packtune::cli {

namespace po = boost::program_options;

int run_config_command(const std::vector<std::string>& args) {
  po::options_description options("packtune config --markdown");
  options.add_options()("help,h", "show this help")("markdown", "print the config's keys as docs/config.md");
  const auto vm = parse_command_line("config", args, options);
  if (vm.count("help")) {
    std::cout << options;
    return 0;
  }
  if (!vm.count("markdown")) throw InputError("config: missing --markdown; see packtune config --help");
  std::cout << config_table::markdown();
  return 0;
}

}  // namespace packtune::cli
