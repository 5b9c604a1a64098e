#pragma once
// The tuner-only subcommands, which need no actor, network or model:
//
//   packtune brackets --tuner hyperband --min-budget m --max-budget M --eta E [--json]
//   packtune simulate [CONFIG] --objective table:FILE|synthetic [--tuner NAME]
//       [--tuner-plugin PATH.so]... [--tuner-setting KEY=VALUE]... [--eta E]
//       [--min-budget m] [--max-budget M] [--trials N] [--mode min|max] [--workers W]
//       [--seed S] [--report-every B] [--json]
//
// `args` are the arguments after the subcommand's name. Both print to stdout and return the
// exit status; bad input throws packtune::InputError for the caller to print as one line.
#include <string>
#include <vector>

namespace packtune::cli {

int run_brackets_command(const std::vector<std::string>& args);
int run_simulate_command(const std::vector<std::string>& args);

}  // namespace packtune::cli
