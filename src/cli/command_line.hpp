#pragma once
// Parsing of one subcommand's options: a malformed command line is an input error naming the
// command and where its help is.
#include <string>
#include <vector>

#include <boost/program_options.hpp>

namespace packtune::cli {

boost::program_options::variables_map parse_command_line(
    const std::string& command, const std::vector<std::string>& args,
    const boost::program_options::options_description& options,
    const boost::program_options::positional_options_description& positional = {});

}  // namespace packtune::cli
