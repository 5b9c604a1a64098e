// packtune-actor: `packtune actor`'s process, the one executable that links LibTorch.
// `packtune actor ARGS` replaces itself with this executable under the command line
// `packtune actor ARGS` (cli/actor_launch.hpp), so users, scripts and the node and driver that
// spawn actors keep calling `packtune actor`. Started directly, `packtune-actor ARGS` works too.
// Errors as packtune's: one line on stderr, exit 2 for bad input, 1 for any other failure.
#include <iostream>
#include <string>
#include <vector>

#include <boost/program_options.hpp>
#include <spdlog/spdlog.h>

#include "actor_process/actor_process.hpp"
#include "actors/device.hpp"
#include "packtune/error.hpp"
#include "util/log_pattern.hpp"
#include "util/subcommand.hpp"

namespace po = boost::program_options;

namespace {

int actor_command(const std::vector<std::string>& args) {
  packtune::util::Subcommand command("actor", "packtune actor --driver ENDPOINT [options]");
  command.options()
      ("driver", po::value<std::string>(), "the driver's ZeroMQ endpoint, e.g. tcp://host:5555")
      ("threads", po::value<int>()->default_value(0), "CPU threads for training (0 = all cores)")
      ("node", po::value<int>()->default_value(-1), "set by the node (or driver) that starts the actor")
      ("local-index", po::value<int>()->default_value(-1), "its slot on that node")
      ("connect-timeout", po::value<double>()->default_value(30), "seconds to wait for the driver")
      ("driver-timeout", po::value<double>(), "seconds of driver silence before the actor stops "
                                              "(default: 30 of the driver's heartbeats, at least 30)")
      ("keys", po::value<std::string>(), "CURVE keys from `packtune keys DIR` (the driver's config names the same DIR)")
      ("work-dir", po::value<std::string>(), "where to keep checkpoints on their way to or from a driver on another "
                                             "machine (default: a fresh folder in the temp folder)")
      ("describe-model-plugin", po::value<std::string>(), "load a model plugin, print its families' declarations as "
                                                         "JSON and exit (how the driver learns them without LibTorch)")
      ("check-torchscript", po::value<std::vector<std::string>>()->multitoken(),
       "load TorchScript files, check each against the data (--input, --outputs) and exit: how the driver refuses a "
       "bad file before any actor trains")
      ("input", po::value<std::string>()->default_value("1,28,28"),
       "with --check-torchscript: the data's examples, C,H,W images or D features")
      ("outputs", po::value<int>()->default_value(10), "with --check-torchscript: classes or regression targets")
      ("regression", po::bool_switch(), "with --check-torchscript: the data's task is regression")
      ("attribute", po::value<std::vector<std::string>>()->multitoken(),
       "with --check-torchscript: KEY=KIND, a module attribute the config sets (model.rate=real; kinds: real, "
       "integer, bool, string)");
  if (!command.parse(args)) return 0;
  const auto& vm = command.values();
  if (vm.count("describe-model-plugin")) {
    packtune::actor_process::describe_model_plugin(vm["describe-model-plugin"].as<std::string>());
    return 0;
  }
  if (vm.count("check-torchscript")) {
    packtune::actor_process::check_torchscript_files(vm["check-torchscript"].as<std::vector<std::string>>(),
                                                     vm["input"].as<std::string>(), vm["outputs"].as<int>(),
                                                     vm["regression"].as<bool>(),
                                                     vm.count("attribute") ? vm["attribute"].as<std::vector<std::string>>()
                                                                           : std::vector<std::string>{});
    return 0;
  }
  command.require("driver", "--driver ENDPOINT");
  packtune::actor_process::ActorOptions actor;
  actor.driver = vm["driver"].as<std::string>();
  actor.threads = vm["threads"].as<int>();
  actor.local_index = vm["local-index"].as<int>();
  actor.node_id = vm["node"].as<int>();
  actor.connect_timeout_seconds = vm["connect-timeout"].as<double>();
  if (vm.count("driver-timeout")) {
    actor.driver_timeout_seconds = vm["driver-timeout"].as<double>();
    if (!(actor.driver_timeout_seconds > 0)) throw packtune::InputError("--driver-timeout: expected seconds > 0");
  }
  if (vm.count("keys")) actor.keys = vm["keys"].as<std::string>();
  if (vm.count("work-dir")) actor.work_dir = vm["work-dir"].as<std::string>();
  if (actor.threads < 0) throw packtune::InputError("--threads: expected 0 or more");
  return packtune::actor_process::run_actor(actor);
}

}  // namespace

int main(int argc, char** argv) {
  packtune::actors::use_reproducible_blas();
  // Milliseconds, as the driver's log has them: where an actor's first seconds go (its data,
  // the CUDA context, each profile) is read from the two side by side.
  packtune::util::use_log_pattern("[%H:%M:%S.%e] %^%l%$ %*");
  // `actor` first when packtune handed over (its command line kept as it was).
  const int first = argc > 1 && std::string(argv[1]) == "actor" ? 2 : 1;
  const std::vector<std::string> args(argv + first, argv + argc);
  return packtune::util::exit_code_of([&] { return actor_command(args); });
}
