// packtune: the command-line entry point. Every error becomes one line on stderr and an
// exit code: 2 for bad input, 1 for any other failure.
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include <boost/program_options.hpp>
#include <spdlog/spdlog.h>

#include "cli/actor_launch.hpp"
#include "cli/command_line.hpp"
#include "protocol/curve_keys.hpp"
#include "driver/driver.hpp"
#include "driver/journal.hpp"
#include "experiment/experiment_config.hpp"
#include "cli/export_command.hpp"
#include "cli/report_command.hpp"
#include "cli/inspect_command.hpp"
#include "packtune/error.hpp"
#include "experiment/results_writer.hpp"
#include "tuners/plugin_loader.hpp"
#include "cli/plan_command.hpp"
#include "cli/tuning_commands.hpp"
#include "node/node_agent.hpp"

namespace po = boost::program_options;

namespace {

constexpr const char* kUsage =
    "usage: packtune <command> [options]\n"
    "\n"
    "commands:\n"
    "  run CONFIG [--out DIR]        run a tuning experiment (driver + local actors)\n"
    "  run --resume DIR              continue an experiment whose driver was killed or stopped\n"
    "  node --driver ENDPOINT        start and supervise this machine's actors for a driver\n"
    "  actor --driver ENDPOINT       start an actor that joins a running driver\n"
    "  plan CONFIG [--actors SPEC]   show how the first rung's trials pack onto actors\n"
    "  brackets --tuner hyperband    print Hyperband's schedule\n"
    "  simulate [CONFIG] --objective simulate a tuner against a learning-curve objective\n"
    "  inspect FILE.h5 [--json]      show a trial checkpoint: trial, budget, config, tensors\n"
    "  export DIR [--csv]            an experiment's reports as CSV, config flattened into columns\n"
    "  report DIR [--output FILE]    DIR/report.html: charts of the experiment, one file that opens offline\n"
    "  keys DIR                      make CURVE keys for a driver and actors on other machines\n"
    "\n"
    "run `packtune <command> --help` for the options of a command\n";

std::string default_out_dir(const std::string& name) {
  char stamp[32];
  const std::time_t now = std::time(nullptr);
  std::strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", std::localtime(&now));
  return "runs/" + name + "-" + stamp;
}

// `packtune run --resume DIR [CONFIG]`: the config comes from the journal's header; a CONFIG or
// an override given anyway must not change what the experiment is.
packtune::ExperimentConfig resumed_config(const std::string& dir, const po::variables_map& vm,
                                          const packtune::Overrides& overrides) {
  const auto journal = packtune::journal_path(dir);
  if (!std::filesystem::exists(journal)) {
    throw packtune::InputError("--resume " + dir + ": no journal.jsonl there; is it the --out of a packtune run?");
  }
  const auto header = packtune::Journal::read_header(journal);
  if (!header.contains("config")) {
    throw packtune::InputError("--resume " + dir + ": journal.jsonl has no header; the experiment cannot be resumed");
  }
  const auto& ran = header["config"];
  packtune::ExperimentConfig config;
  if (vm.count("config")) {
    config = packtune::load_config(vm["config"].as<std::string>());
    packtune::apply_overrides(config, overrides);
  } else {
    config = packtune::parse_config(ran, dir + "/journal.jsonl");
    packtune::apply_overrides(config, overrides);
  }
  // The threads an actor trains with can change a trial's sums, so they are the run's own:
  // --actors may change on resume, the threads of each actor stay (an explicit other value
  // is refused below).
  if (config.threads_per_actor == 0 && ran.contains("threads_per_actor") && ran["threads_per_actor"].is_number_integer()) {
    config.threads_per_actor = ran["threads_per_actor"].get<int>();
  }
  packtune::record_as_run(config);
  // A run whose config as run has no threads (it had no local actors, or ran before packtune
  // recorded them) takes what this machine gives.
  if (!ran.contains("threads_per_actor")) config.source.erase("threads_per_actor");
  const auto differ = packtune::resume_differences(ran, config.source);
  if (!differ.empty()) {
    std::string keys;
    for (const auto& k : differ) keys += (keys.empty() ? "" : ", ") + k;
    throw packtune::InputError("--resume " + dir + ": the config differs from the one the experiment ran with in " +
                               keys + "; resume with the same config, or start a new experiment with another --out");
  }
  return config;
}

int run_command(const std::vector<std::string>& args) {
  po::options_description options("packtune run CONFIG [options] | packtune run --resume DIR [options]");
  options.add_options()
      ("help,h", "show this help")
      ("config", po::value<std::string>(), "the experiment config (JSON)")
      ("out,o", po::value<std::string>(), "results directory (default runs/NAME-TIME)")
      ("resume", po::value<std::string>(), "continue the experiment whose results are in DIR (its driver was killed or "
                                           "stopped); CONFIG may be left out")
      ("trials", po::value<std::int64_t>(), "override tuner.trials")
      ("actors", po::value<int>(), "override the number of local actors (0: only nodes and actors that join)")
      ("listen", po::value<std::string>(), "override listen: ipc, tcp or an endpoint such as tcp://0.0.0.0:5555")
      ("keys", po::value<std::string>(), "override keys: the CURVE keys folder of `packtune keys DIR`")
      ("seed", po::value<std::int64_t>(), "override the experiment seed")
      ("device", po::value<std::string>(), "override the device: cpu, cuda, cuda:N, auto")
      ("tuner", po::value<std::string>(), "override the tuner by name")
      ("max-pack", po::value<int>(), "override max_pack: trials trained at once per actor")
      ("fuse", po::value<std::string>(), "override fuse: auto (default) | always | never")
      ("mixed-packs", po::value<std::string>(), "override mixed_packs: auto (default: on GPUs, not on CPUs) | always | never")
      ("tuner-plugin", po::value<std::vector<std::string>>(), "load tuners from a shared library")
      ("keep-checkpoints", po::value<std::string>(), "all | needed (default): trial checkpoints kept in DIR/checkpoints")
      ("quiet,q", "warnings and the final summary only: no status table or lines")
      ("verbose,v", "the planner's and profiler's workings on the console too (DIR/driver.log always has them)");
  po::positional_options_description positional;
  positional.add("config", 1);
  auto vm = packtune::cli::parse_command_line("run", args, options, positional);
  if (vm.count("help")) {
    std::cout << options;
    return 0;
  }
  const bool resume = vm.count("resume") > 0;
  if (!vm.count("config") && !resume) {
    throw packtune::InputError("run: missing CONFIG; usage: packtune run CONFIG [--out DIR] or packtune run --resume DIR");
  }
  if (resume && vm.count("out") && vm["out"].as<std::string>() != vm["resume"].as<std::string>()) {
    throw packtune::InputError("run: --resume DIR continues the experiment in DIR; leave --out out");
  }
  packtune::Overrides overrides;
  if (vm.count("tuner-plugin")) {
    const auto& plugins = vm["tuner-plugin"].as<std::vector<std::string>>();
    // The config as run records the plugin for --resume, and it holds one.
    if (plugins.size() > 1) throw packtune::InputError("--tuner-plugin: one library per run");
    overrides.tuner_plugin = plugins.front();
  }
  if (vm.count("trials")) overrides.trials = vm["trials"].as<std::int64_t>();
  if (vm.count("actors")) overrides.actors = vm["actors"].as<int>();
  if (vm.count("listen")) overrides.listen = vm["listen"].as<std::string>();
  if (vm.count("keys")) overrides.keys = vm["keys"].as<std::string>();
  if (vm.count("seed")) overrides.seed = vm["seed"].as<std::int64_t>();
  if (vm.count("device")) overrides.device = vm["device"].as<std::string>();
  if (vm.count("tuner")) overrides.tuner = vm["tuner"].as<std::string>();
  if (vm.count("max-pack")) overrides.max_pack = vm["max-pack"].as<int>();
  if (vm.count("fuse")) overrides.fuse = vm["fuse"].as<std::string>();
  if (vm.count("mixed-packs")) overrides.mixed_packs = vm["mixed-packs"].as<std::string>();
  if (vm.count("keep-checkpoints")) overrides.keep_checkpoints = vm["keep-checkpoints"].as<std::string>();

  packtune::DriverOptions driver;
  driver.quiet = vm.count("quiet") > 0;
  driver.verbose = vm.count("verbose") > 0;
  if (driver.quiet && driver.verbose) throw packtune::InputError("run: --quiet and --verbose contradict each other; give one");
  packtune::ExperimentConfig config;
  if (resume) {
    driver.out_dir = vm["resume"].as<std::string>();
    driver.resume = true;
    config = resumed_config(driver.out_dir, vm, overrides);
  } else {
    config = packtune::load_config(vm["config"].as<std::string>());
    packtune::apply_overrides(config, overrides);
    packtune::record_as_run(config);
    driver.out_dir = vm.count("out") ? vm["out"].as<std::string>() : default_out_dir(config.name);
  }
  if (!config.tuner_plugin.empty()) packtune::tuners::load_tuner_plugin(config.tuner_plugin);
  packtune::validate(config);
  // The driver checks --out is fresh once it holds the folder's lock: a check here could
  // pass for two drivers started together.
  return packtune::run_experiment(config, driver);
}

int node_command(const std::vector<std::string>& args) {
  po::options_description options("packtune node --driver ENDPOINT [options]");
  options.add_options()
      ("help,h", "show this help")
      ("driver", po::value<std::string>(), "the driver's ZeroMQ endpoint, e.g. tcp://host:5555")
      ("actors", po::value<int>()->default_value(1), "CPU actors to run when no GPU is listed")
      ("gpus", po::value<std::string>(), "GPUs for one actor each, e.g. 0,2 (default: CUDA_VISIBLE_DEVICES if set)")
      ("threads", po::value<int>()->default_value(0), "CPU threads per actor (0 = the cores divided among the actors)")
      ("keys", po::value<std::string>(), "CURVE keys from `packtune keys DIR` (the driver's config names the same DIR)")
      ("log-dir", po::value<std::string>(), "where actor-I.log go (default WORK_DIR/logs)")
      ("work-dir", po::value<std::string>(), "actors' local files, in DIR/actor-I (default a fresh folder under $TMPDIR)")
      ("max-restarts", po::value<int>()->default_value(3), "restarts of a dying actor before it is given up")
      ("connect-timeout", po::value<double>()->default_value(30), "seconds to wait for the driver's answer")
      ("driver-timeout", po::value<double>()->default_value(60), "seconds of driver silence before the node stops");
  auto vm = packtune::cli::parse_command_line("node", args, options);
  if (vm.count("help")) {
    std::cout << options;
    return 0;
  }
  if (!vm.count("driver")) throw packtune::InputError("node: missing --driver ENDPOINT");
  packtune::NodeOptions node;
  node.driver = vm["driver"].as<std::string>();
  node.actors = vm["actors"].as<int>();
  node.threads = vm["threads"].as<int>();
  node.max_restarts = vm["max-restarts"].as<int>();
  node.connect_timeout_seconds = vm["connect-timeout"].as<double>();
  node.driver_timeout_seconds = vm["driver-timeout"].as<double>();
  if (vm.count("keys")) node.keys = vm["keys"].as<std::string>();
  if (vm.count("log-dir")) node.log_dir = vm["log-dir"].as<std::string>();
  if (vm.count("work-dir")) node.work_dir = vm["work-dir"].as<std::string>();
  node.gpus = packtune::node_gpus(vm.count("gpus") ? vm["gpus"].as<std::string>() : "", std::getenv("CUDA_VISIBLE_DEVICES"));
  if (node.actors < 1) throw packtune::InputError("--actors: expected at least 1");
  if (node.threads < 0) throw packtune::InputError("--threads: expected 0 or more");
  if (node.max_restarts < 0) throw packtune::InputError("--max-restarts: expected 0 or more");
  if (!(node.connect_timeout_seconds > 0)) throw packtune::InputError("--connect-timeout: expected seconds > 0");
  if (!(node.driver_timeout_seconds > 0)) throw packtune::InputError("--driver-timeout: expected seconds > 0");
  return packtune::run_node(node);
}

int keys_command(const std::vector<std::string>& args) {
  po::options_description options("packtune keys DIR");
  options.add_options()("help,h", "show this help")("dir", po::value<std::string>(), "where to write the keys");
  po::positional_options_description positional;
  positional.add("dir", 1);
  auto vm = packtune::cli::parse_command_line("keys", args, options, positional);
  if (vm.count("help")) {
    std::cout << options;
    return 0;
  }
  if (!vm.count("dir")) throw packtune::InputError("keys: missing DIR");
  const auto dir = vm["dir"].as<std::string>();
  packtune::make_keys(dir);
  std::cout << "wrote CURVE keys to " << dir << "/: driver.key, driver.pub, actor.key, actor.pub, authorized_actors\n"
            << "driver: set \"keys\": \"" << dir << "\" in the config (needed when \"listen\" is reachable from other machines)\n"
            << "actors: copy driver.pub, actor.pub and actor.key to their machines and start them with --keys DIR\n";
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  spdlog::set_pattern("[%H:%M:%S] %^%l%$ %v");
  if (argc < 2) {
    std::cerr << kUsage;
    return 2;
  }
  const std::string command = argv[1];
  const std::vector<std::string> args(argv + 2, argv + argc);
  return packtune::cli::exit_code_of([&]() -> int {
    if (command == "run") return run_command(args);
    // The actor alone links LibTorch; it is its own executable (cli/actor_launch.hpp).
    if (command == "actor") packtune::cli::exec_actor(argv[0], args);
    if (command == "node") return node_command(args);
    if (command == "keys") return keys_command(args);
    if (command == "plan") return packtune::cli::run_plan_command(args);
    if (command == "brackets") return packtune::cli::run_brackets_command(args);
    if (command == "simulate") return packtune::cli::run_simulate_command(args);
    if (command == "inspect") return packtune::cli::run_inspect_command(args);
    if (command == "export") return packtune::cli::run_export_command(args);
    if (command == "report") return packtune::cli::run_report_command(args);
    if (command == "--help" || command == "-h" || command == "help") {
      std::cout << kUsage;
      return 0;
    }
    std::cerr << "packtune: unknown command \"" << command << "\"\n" << kUsage;
    return 2;
  });
}
