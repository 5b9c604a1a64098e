#pragma once
// `packtune actor ...` hands over to the `packtune-actor` executable beside `packtune`: only the
// actor trains, so only it links LibTorch, and every other command (plan, inspect, export, the
// driver, the node) starts without loading LibTorch and running its static initialisers.
#include <string>
#include <vector>

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

}  // namespace packtune::cli
