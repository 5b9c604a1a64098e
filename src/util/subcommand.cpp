#include "util/subcommand.hpp"

#include <iostream>
#include <utility>

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

Subcommand::Subcommand(std::string name, std::string usage) : name_(std::move(name)), usage_(std::move(usage)) {
  options_.add_options()("help,h", "show this help");
}

void Subcommand::positional(const std::string& key, const std::string& label, const std::string& help,
                            const std::string& missing) {
  options_.add_options()(key.c_str(), po::value<std::string>(), help.c_str());
  positional_.add(key.c_str(), 1);
  positional_key_ = key;
  positional_label_ = label;
  missing_ = missing.empty() ? "usage: " + usage_ : missing;
}

bool Subcommand::parse(const std::vector<std::string>& args) {
  values_ = parse_command_line(name_, args, options_, positional_);
  if (!has("help")) return true;
  print_help();
  return false;
}

std::string Subcommand::argument() const {
  if (!has(positional_key_)) throw InputError(name_ + ": missing " + positional_label_ + "; " + missing_);
  return values_[positional_key_].as<std::string>();
}

void Subcommand::require(const std::string& key, const std::string& label) const {
  if (!has(key)) throw InputError(name_ + ": missing " + label + "; usage: " + usage_);
}

void Subcommand::print_help() const { std::cout << "usage: " << usage_ << "\n\n" << options_; }

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
