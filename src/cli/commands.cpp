#include "cli/commands.hpp"

#include <algorithm>

#include "cli/actor_launch.hpp"
#include "cli/brackets_command.hpp"
#include "cli/config_command.hpp"
#include "cli/export_command.hpp"
#include "cli/inspect_command.hpp"
#include "cli/keys_command.hpp"
#include "cli/node_command.hpp"
#include "cli/plan_command.hpp"
#include "cli/profile_command.hpp"
#include "cli/report_command.hpp"
#include "cli/run_command.hpp"
#include "cli/simulate_command.hpp"

namespace packtune::cli {
namespace {

// A command that needs only its arguments.
template <int (*Run)(const std::vector<std::string>&)>
int with_args(const std::string&, const std::vector<std::string>& args) {
  return Run(args);
}

}  // namespace

const std::vector<Command>& commands() {
  static const std::vector<Command> all = {
      {"run",
       {{"run CONFIG [--out DIR]", "run a tuning experiment (driver + local actors)"},
        {"run --resume DIR", "continue an experiment whose driver was killed or stopped"}},
       with_args<run_run_command>},
      {"node", {{"node --driver ENDPOINT", "start and supervise this machine's actors for a driver"}},
       with_args<run_node_command>},
      // The actor alone links LibTorch; it is its own executable (cli/actor_launch.hpp).
      {"actor", {{"actor --driver ENDPOINT", "start an actor that joins a running driver"}},
       [](const std::string& program, const std::vector<std::string>& args) -> int { exec_actor(program, args); }},
      {"plan", {{"plan CONFIG [--actors SPEC]", "show how the first rung's trials pack onto actors"}},
       with_args<run_plan_command>},
      {"brackets", {{"brackets --tuner hyperband", "print Hyperband's schedule"}}, with_args<run_brackets_command>},
      {"simulate", {{"simulate [CONFIG] --objective", "simulate a tuner against a learning-curve objective"}},
       with_args<run_simulate_command>},
      {"inspect", {{"inspect FILE.h5 [--json]", "show a trial checkpoint: trial, budget, config, tensors"}},
       with_args<run_inspect_command>},
      {"export", {{"export DIR [--csv]", "an experiment's reports as CSV, config flattened into columns"}},
       with_args<run_export_command>},
      {"report", {{"report DIR [--output FILE]", "DIR/report.html: charts of the experiment, one file that opens offline"}},
       with_args<run_report_command>},
      {"profile", {{"profile [--clear]", "show or clear the throughput profiles kept for later runs"}},
       with_args<run_profile_command>},
      {"keys", {{"keys DIR", "make CURVE keys for a driver and actors on other machines"}}, with_args<run_keys_command>},
      // docs/config.md from the config table; not for users, so not in the usage text.
      {"config", {}, with_args<run_config_command>},
  };
  return all;
}

std::string usage_text() {
  std::string out = "usage: packtune <command> [options]\n\ncommands:\n";
  for (const auto& command : commands()) {
    for (const auto& [synopsis, summary] : command.usage) {
      std::string line = std::string("  ") + synopsis;
      line.resize(std::max<std::size_t>(line.size(), 31), ' ');
      out += line + " " + summary + "\n";
    }
  }
  return out + "\nrun `packtune <command> --help` for the options of a command\n";
}

}  // namespace packtune::cli
