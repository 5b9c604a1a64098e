#pragma once
// `packtune inspect FILE.h5 [--json]`: what a trial checkpoint holds (trial, budget, step,
// config, metrics, every tensor's name, type and shape), after verifying its checksums.
// No LibTorch: it reads the file with actors/checkpoint_file.hpp and checkpoint_verify.hpp only.
#include <string>
#include <vector>

namespace packtune::cli {

// `args` are the arguments after "inspect". Prints to stdout and returns the exit status; a
// missing, foreign or corrupt file throws InputError for the caller to print as one line.
int run_inspect_command(const std::vector<std::string>& args);

}  // namespace packtune::cli
