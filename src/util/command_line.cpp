#include "util/command_line.hpp"

#include <iostream>

#include "packtune/error.hpp"

namespace packtune::util {

namespace po = boost::program_options;

po::variables_map parse_command_line(const std::string& command, const std::vector<std::string>& args,
                                     const po::options_description& options,
                                     const po::positional_options_description& positional) {
  po::variables_map vm;
  try {
    po::store(po::command_line_parser(args).options(options).positional(positional).run(), vm);
    po::notify(vm);
  } catch (const po::error& e) {
    throw InputError(command + ": " + e.what() + "; see packtune " + command + " --help");
  }
  return vm;
}

int exit_code_of(const std::function<int()>& command) {
  try {
    return command();
  } catch (const InputError& e) {
    std::cerr << "packtune: error: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "packtune: error: " << e.what() << "\n";
    return 1;
  } catch (...) {
    // Only code we did not write throws other types: a tuner plugin's `throw 42` ended the
    // process in std::terminate before, skipping the driver's stop.
    std::cerr << "packtune: error: an exception that is not a std::exception (a tuner plugin's?)\n";
    return 1;
  }
}

}  // namespace packtune::util
