#include "cli/node_command.hpp"

#include <cstdlib>
#include <iostream>

#include <boost/program_options.hpp>

#include "util/subcommand.hpp"
#include "node/node_agent.hpp"
#include "packtune/error.hpp"

namespace packtune::cli {

namespace po = boost::program_options;

int run_node_command(const std::vector<std::string>& args) {
  util::Subcommand command("node", "packtune node --driver ENDPOINT [options]");
  command.options()
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
  if (!command.parse(args)) return 0;
  command.require("driver", "--driver ENDPOINT");
  const auto& vm = command.values();
  NodeOptions node;
  node.driver = vm["driver"].as<std::string>();
  node.actors = vm["actors"].as<int>();
  node.threads = vm["threads"].as<int>();
  node.max_restarts = vm["max-restarts"].as<int>();
  node.connect_timeout_seconds = vm["connect-timeout"].as<double>();
  node.driver_timeout_seconds = vm["driver-timeout"].as<double>();
  if (vm.count("keys")) node.keys = vm["keys"].as<std::string>();
  if (vm.count("log-dir")) node.log_dir = vm["log-dir"].as<std::string>();
  if (vm.count("work-dir")) node.work_dir = vm["work-dir"].as<std::string>();
  node.gpus = node_gpus(vm.count("gpus") ? vm["gpus"].as<std::string>() : "", std::getenv("CUDA_VISIBLE_DEVICES"));
  if (node.actors < 1) throw InputError("--actors: expected at least 1");
  if (node.threads < 0) throw InputError("--threads: expected 0 or more");
  if (node.max_restarts < 0) throw InputError("--max-restarts: expected 0 or more");
  if (!(node.connect_timeout_seconds > 0)) throw InputError("--connect-timeout: expected seconds > 0");
  if (!(node.driver_timeout_seconds > 0)) throw InputError("--driver-timeout: expected seconds > 0");
  return run_node(node);
}

}  // namespace packtune::cli
