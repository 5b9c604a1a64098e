#pragma once
// Parsing of one subcommand's options: a malformed command line is an input error naming the
// command and where its help is.
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <boost/program_options.hpp>
#include <nlohmann/json.hpp>

namespace packtune::cli {

boost::program_options::variables_map parse_command_line(
    const std::string& command, const std::vector<std::string>& args,
    const boost::program_options::options_description& options,
    const boost::program_options::positional_options_description& positional = {});

// An option's text, when given. Numbers are read from the text rather than by program_options so
// that a bad one gets a message naming the flag and what it expects: "--eta: expected a number".
std::optional<std::string> option_text(const boost::program_options::variables_map& vm, const char* name);
std::optional<double> option_number(const boost::program_options::variables_map& vm, const char* name);
std::optional<std::int64_t> option_integer(const boost::program_options::variables_map& vm, const char* name,
                                           std::int64_t minimum);

// Whole budgets print as integers ("budget": 1, not 1.0), as in the paper's tables; NaN as null.
nlohmann::ordered_json number_json(double v);

// "usage: USAGE", a blank line and the options.
void print_usage(const std::string& usage, const boost::program_options::options_description& options);

// Runs one command of `packtune` or `packtune-actor` and returns the process's exit code: the
// command's own, or 2 after an InputError and 1 after any other exception, each printed as one
// line on stderr ("packtune: error: ..."), so both executables report errors alike.
int exit_code_of(const std::function<int()>& command);

}  // namespace packtune::cli
