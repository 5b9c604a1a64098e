#include "cli/keys_command.hpp"

#include <iostream>

#include <boost/program_options.hpp>

#include "util/subcommand.hpp"
#include "packtune/error.hpp"
#include "protocol/curve_keys.hpp"

namespace packtune::cli {

int run_keys_command(const std::vector<std::string>& args) {
  util::Subcommand command("keys", "packtune keys DIR");
  command.positional("dir", "DIR", "where to write the keys");
  if (!command.parse(args)) return 0;
  const auto dir = command.argument();
  make_keys(dir);
  std::cout << "wrote CURVE keys to " << dir << "/: driver.key, driver.pub, actor.key, actor.pub, authorized_actors\n"
            << "driver: set \"keys\": \"" << dir << "\" in the config (needed when \"listen\" is reachable from other machines)\n"
            << "actors: copy driver.pub, actor.pub and actor.key to their machines and start them with --keys DIR\n";
  return 0;
}

}  // namespace packtune::cli
