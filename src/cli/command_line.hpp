#pragma once
// The commands' option parsing and exit codes, which util/command_line.hpp holds since
// packtune-actor uses them too; the names stay in packtune::cli for the commands here.
#include "util/command_line.hpp"

namespace packtune::cli {

using util::exit_code_of;
using util::parse_command_line;

}  // namespace packtune::cli
