#pragma once
// `packtune simulate [CONFIG] --objective table:FILE|synthetic|exec:CMD [--tuner NAME]
//     [--tuner-plugin PATH.so]... [--tuner-setting KEY=VALUE]... [--eta E]
//     [--min-budget m] [--max-budget M] [--trials N] [--mode min|max] [--workers W]
//     [--seed S] [--report-every B] [--objective-timeout SECONDS] [--json]`:
// a tuner against a learning-curve objective, with no actor, network or model. CONFIG's keys
// are read by the config table (experiment/config_keys.def), only those a simulation uses.
#include <string>
#include <vector>

namespace packtune::cli {

// `args` are the arguments after "simulate". Prints to stdout and returns the exit status; bad
// input throws packtune::InputError for the caller to print as one line.
int run_simulate_command(const std::vector<std::string>& args);

}  // namespace packtune::cli
