#pragma once
// `packtune actor ...` hands over to the `packtune-actor` executable beside `packtune`: only the
// actor trains, so only it links LibTorch, and every other command (plan, inspect, export, the
// driver, the node) starts without loading LibTorch and running its static initialisers.
#include <string>
#include <vector>

#include "experiment/experiment_config.hpp"
#include "spec/input_shape.hpp"

namespace packtune::cli {

// Where `packtune-actor` is: beside the running executable (/proc/self/exe, links resolved), as
// the build and `cmake --install` put it.
std::string actor_executable();

// Replaces this process with `packtune-actor` (same pid, so a node or driver that started
// `packtune actor` supervises and signals the actor itself). Its command line stays
// `ARGV0 actor ARGS...`, as `ps` and `pgrep -f "packtune actor"` showed it before the actor had
// an executable of its own; packtune-actor skips that leading `actor`. Returns only by
// throwing packtune::Error when the executable cannot be started.
[[noreturn]] void exec_actor(const std::string& argv0, const std::vector<std::string>& args);

// Learns a model plugin's families without loading LibTorch here: `packtune-actor
// --describe-model-plugin PATH` loads it and prints their declarations, which go into
// spec::DeclaredFamilies, so that the config's model and space are checked against them.
// The actor's one-line error (a missing file, symbol, wrong version...) is thrown as it
// said it: InputError for its exit code 2, Error for any other failure. A plugin whose loading
// does not end (a static constructor that blocks) is an Error naming it after
// $PACKTUNE_MODEL_PLUGIN_TIMEOUT seconds (default 60), its process group killed.
void declare_model_plugin(const std::string& path);

// Checks TorchScript files (model family torchscript) against the data without loading
// LibTorch here: `packtune-actor --check-torchscript PATH...` loads each and runs its forward on
// a batch of `input`'s shape, and checks that it has the `attributes` the config sets
// ("model.rate=real", actors/torchscript_file.hpp). Its one-line refusal is thrown as an
// InputError, so a bad file ends `packtune run` with exit 2 before any actor trains; any other
// failure is an Error. Limited by $PACKTUNE_MODEL_PLUGIN_TIMEOUT as declare_model_plugin is.
void check_torchscript_files(const std::vector<std::string>& paths, const spec::InputShape& input,
                             const std::vector<std::string>& attributes = {});
// The config's TorchScript files (model.path, and the choices of space.path) checked so, with
// the attributes its other keys set, when model.family is torchscript.
void check_torchscript_models(const ExperimentConfig& config);

}  // namespace packtune::cli
