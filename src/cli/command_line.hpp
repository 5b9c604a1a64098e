#pragma once
// What the commands of `packtune` share on their command lines: reading an option's number
// with a message naming the flag, budgets printed as JSON, the usage text. Parsing the options
// and turning a command's outcome into an exit code are util/command_line.hpp's, since
// packtune-actor uses them too; the names stay in packtune::cli for the commands here.
#include <cstdint>
#include <optional>
#include <string>

#include <boost/program_options.hpp>
#include <nlohmann/json.hpp>

#include "util/command_line.hpp"

namespace packtune::cli {

using util::exit_code_of;
using util::parse_command_line;

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

}  // namespace packtune::cli
