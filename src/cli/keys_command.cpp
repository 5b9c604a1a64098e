#include "cli/keys_command.hpp"

#include <iostream>

#include <boost/program_options.hpp>

#include "cli/command_line.hpp"
#include "packtune/error.hpp"
#include "protocol/curve_keys.hpp"

namespace packtune::cli {

namespace po = boost::program_options;

int run_keys_command(const std::vector<std::string>& args) {
  po::options_description options("packtune keys DIR");
  options.add_options()("help,h", "show this help")("dir", po::value<std::string>(), "where to write the keys");
  po::positional_options_description positional;
  positional.add("dir", 1);
  auto vm = parse_command_line("keys", args, options, positional);
  if (vm.count("help")) {
    std::cout << options;
    return 0;
  }
  if (!vm.count("dir")) throw InputError("keys: missing DIR");
  const auto dir = vm["dir"].as<std::string>();
  make_keys(dir);
  std::cout << "wrote CURVE keys to " << dir << "/: driver.key, driver.pub, actor.key, actor.pub, authorized_actors\n"
            << "driver: set \"keys\": \"" << dir << "\" in the config (needed when \"listen\" is reachable from other machines)\n"
            << "actors: copy driver.pub, actor.pub and actor.key to their machines and start them with --keys DIR\n";
  return 0;
}

}  // namespace packtune::cli
