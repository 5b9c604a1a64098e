#pragma once
// Reading the values of `packtune`'s options: numbers read from the option's text with a
// message naming the flag, and budgets printed as JSON. Parsing a command line, its help and
// its missing arguments are util/subcommand.hpp's, since packtune-actor parses one too.
#include <cstdint>
#include <optional>
#include <string>

#include <boost/program_options.hpp>
#include <nlohmann/json.hpp>

namespace packtune::cli {

// An option's text, when given. Numbers are read from the text rather than by program_options so
// that a bad one gets a message naming the flag and what it expects: "--eta: expected a number".
std::optional<std::string> option_text(const boost::program_options::variables_map& vm, const char* name);
std::optional<double> option_number(const boost::program_options::variables_map& vm, const char* name);
std::optional<std::int64_t> option_integer(const boost::program_options::variables_map& vm, const char* name,
                                           std::int64_t minimum);

// Whole budgets print as integers ("budget": 1, not 1.0), as in the paper's tables; NaN as null.
nlohmann::ordered_json number_json(double v);

}  // namespace packtune::cli
