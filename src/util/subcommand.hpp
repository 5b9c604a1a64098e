#pragma once
// The command line of both executables, `packtune` and `packtune-actor`: one subcommand's
// options parsed so that a malformed command line is an input error naming the command and
// where its help is, `--help` prints the same usage block for every command, and a missing
// argument is one line naming what was expected. And one way to turn a command's outcome
// into the process's exit code.
#include <functional>
#include <string>
#include <vector>

#include <boost/program_options.hpp>

namespace packtune::util {

boost::program_options::variables_map parse_command_line(
    const std::string& command, const std::vector<std::string>& args,
    const boost::program_options::options_description& options,
    const boost::program_options::positional_options_description& positional = {});

// One subcommand: its usage line, its options (`--help` is there already) and at most one
// positional argument.
//
//   Subcommand command("plan", "packtune plan CONFIG [options]");
//   command.positional("config", "CONFIG", "the experiment's JSON config");
//   command.options()("json", "print the plan as JSON");
//   if (!command.parse(args)) return 0;  // --help was printed
//   const auto path = command.argument();  // or "plan: missing CONFIG; usage: ..."
class Subcommand {
 public:
  Subcommand(std::string name, std::string usage);

  boost::program_options::options_description_easy_init options() { return options_.add_options(); }
  // The one argument without a flag: its key in values(), its name in messages, and its help.
  // `missing`: what argument() says when it is absent, after "NAME: missing LABEL"; the usage
  // line by default.
  void positional(const std::string& key, const std::string& label, const std::string& help,
                  const std::string& missing = "");

  // False: `--help` was given and the usage and options are printed; the command returns 0.
  bool parse(const std::vector<std::string>& args);
  const boost::program_options::variables_map& values() const { return values_; }
  bool has(const std::string& key) const { return values_.count(key) > 0; }
  // The positional argument. Throws InputError naming it when it was not given.
  std::string argument() const;
  // Throws InputError "NAME: missing LABEL; usage: ..." when option `key` was not given.
  void require(const std::string& key, const std::string& label) const;

  // "usage: USAGE", a blank line and the options.
  void print_help() const;

 private:
  std::string name_, usage_;
  boost::program_options::options_description options_{"options"};
  boost::program_options::positional_options_description positional_;
  std::string positional_key_, positional_label_, missing_;
  boost::program_options::variables_map values_;
};

// Runs one command of `packtune` or `packtune-actor` and returns the process's exit code: the
// command's own, or 2 after an InputError and 1 after any other exception, each printed as one
// line on stderr ("packtune: error: ..."), so both executables report errors alike.
int exit_code_of(const std::function<int()>& command);

}  // namespace packtune::util
