#pragma once
// The command line of both executables, `packtune` and `packtune-actor`: one subcommand's
// options parsed so that a malformed command line is an input error naming the command and
// where its help is, and one way to turn a command's outcome into the process's exit code.
#include <functional>
#include <string>
#include <vector>

#include <boost/program_options.hpp>

namespace packtune::util {

boost::program_options::variables_map parse_command_line(
    const std::string& command, const std::vector<std::string>& args,
    const boost::program_options::options_description& options,
    const boost::program_options::positional_options_description& positional = {});

// Runs one command of `packtune` or `packtune-actor` and returns the process's exit code: the
// command's own, or 2 after an InputError and 1 after any other exception, each printed as one
// line on stderr ("packtune: error: ..."), so both executables report errors alike.
int exit_code_of(const std::function<int()>& command);

}  // namespace packtune::util
