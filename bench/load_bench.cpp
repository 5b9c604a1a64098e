// The control plane under load: the real driver (`packtune run`, spawned) and the real protocol
// over ZeroMQ, against simulated actors whose training is a timer. Every simulated actor is
// a DEALER socket of this one process, driven by one epoll loop, so 1,000 of them cost this
// process little more than the messages they exchange; a job sleeps (time_scale wall seconds
// per unit of budget, one unit being one simulated second) and reports the metric of a
// learning-curve objective, as `packtune simulate` does. Prints one JSON object.
//
//   load_bench [--actors N | --nodes N --actors-per-node M] [--trials N] [--time-scale X] [--quick] [--eta E]
//              [--min-budget m] [--max-budget M] [--report-every B] [--objective synthetic|table:FILE]
//              [--sampler random|tpe] [--seed S] [--heartbeat S] [--driver-quiet] [--packtune PATH]
//              [--keep DIR] [--driver-open-files N]
//
// The minimum the schedule allows (`minimum_seconds`) is the makespan of the same tuner, seed
// and objective on as many workers as there are actors in tuners::Simulator, which is the
// driver's schedule with a control plane that costs nothing, times the time scale.
// `overhead` = wall_seconds / minimum_seconds - 1, wall time running from the first Assign any
// actor receives to the Shutdown that ends the experiment (docs/benchmarks.md).
//
// This file sets the run up and tears it down; load_bench/ holds its parts: the options, the
// experiment and its simulated minimum, the driver process, the simulated actors (fleet) and
// the figures.
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/load_bench/clock.hpp"
#include "bench/load_bench/driver_process.hpp"
#include "bench/load_bench/experiment.hpp"
#include "bench/load_bench/figures.hpp"
#include "bench/load_bench/fleet.hpp"
#include "bench/load_bench/options.hpp"
#include "datasets/idx.hpp"
#include "packtune/error.hpp"

namespace packtune::bench {
namespace {

using json = nlohmann::json;
namespace fs = std::filesystem;

// Each connection (a simulated actor's, or a node's) holds two descriptors here and one in the
// driver.
void raise_open_files(int actors) {
  struct rlimit limit {};
  ::getrlimit(RLIMIT_NOFILE, &limit);
  const rlim_t needed = static_cast<rlim_t>(actors) * 2 + 256;
  if (limit.rlim_cur < needed) {
    limit.rlim_cur = std::min(limit.rlim_max, std::max(needed, limit.rlim_cur));
    ::setrlimit(RLIMIT_NOFILE, &limit);
  }
  if (limit.rlim_cur < needed) {
    throw Error("open files: " + std::to_string(actors) + " actors need " + std::to_string(needed) +
                ", the hard limit is " + std::to_string(limit.rlim_max) + " (ulimit -Hn)");
  }
}

// The endpoint of the driver's line "driver listening on ENDPOINT; ...", once it is in its log.
std::string listening_on(const std::string& log) {
  std::ifstream in(log);
  const std::string marker = "driver listening on ";
  for (std::string line; std::getline(in, line);) {
    const auto at = line.find(marker);
    if (at == std::string::npos) continue;
    const auto start = at + marker.size();
    const auto end = line.find(';', start);
    if (end != std::string::npos) return line.substr(start, end - start);
  }
  return "";
}

int run(const Options& o) {
  raise_open_files(o.nodes > 0 ? o.nodes : o.actors);
  char pattern[] = "/tmp/packtune-load-XXXXXX";
  if (!::mkdtemp(pattern)) throw Error(std::string("mkdtemp: ") + std::strerror(errno));
  const std::string dir = pattern;
  struct Cleanup {
    std::string dir;
    bool keep;
    ~Cleanup() {
      std::error_code ec;
      if (!keep) fs::remove_all(dir, ec);
    }
  } cleanup{dir, !o.keep.empty()};

  // The driver reads and checks the data files before it starts; simulated actors never read
  // them, so 20 blank images do.
  const std::string data_dir = dir + "/data";
  fs::create_directories(data_dir);
  datasets::IdxArray images{{20, 28, 28}, std::vector<std::uint8_t>(20 * 28 * 28, 0)};
  datasets::IdxArray labels{{20}, {}};
  for (std::uint8_t i = 0; i < 20; ++i) labels.data.push_back(i % 10);
  datasets::write_idx(data_dir + "/train-images-idx3-ubyte", images);
  datasets::write_idx(data_dir + "/train-labels-idx1-ubyte", labels);
  // Over the connection cap the driver listens on loopback TCP: libzmq 4.3.4's ipc listener
  // aborts the process when accept() meets EMFILE (src/ipc_listener.cpp:325), which a burst of
  // connections reaches before the cap shuts the extra ones down; its TCP listener retries.
  const bool over_cap = o.driver_open_files > 0;
  std::string endpoint = over_cap ? "tcp" : "ipc://" + dir + "/driver.ipc";
  const json config = experiment_config(o, endpoint, data_dir);
  std::ofstream(dir + "/config.json") << config.dump(2) << "\n";

  const auto context = tuner_context(o, config);
  RunReadings readings;
  const auto simulated_at = Clock::now();
  auto schedule = simulate_schedule(o, context);
  readings.simulate_seconds = seconds(Clock::now() - simulated_at);

  std::vector<std::string> argv = {o.packtune, "run", dir + "/config.json", "--out", dir + "/out"};
  if (o.driver_open_files > 0) {
    const auto limit = std::to_string(o.driver_open_files);
    argv.insert(argv.begin(), {"prlimit", "--nofile=" + limit + ":" + limit, "--"});
  }
  if (o.driver_quiet) argv.push_back("--quiet");
  readings.load_before = load_average();
  readings.started = Clock::now();
  DriverProcess driver(argv, dir + "/driver.log");
  // Connecting before the driver binds works too, but each early socket then waits out
  // ZeroMQ's reconnect interval.
  while (over_cap ? (endpoint = listening_on(dir + "/driver.log")).empty() : !fs::exists(dir + "/driver.ipc")) {
    if (!driver.running()) driver.fail("the driver exited before it listened");
    if (Clock::now() - readings.started > std::chrono::seconds(60)) driver.fail("the driver did not listen within 60 s");
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  Fleet fleet(o, context, driver);
  ::getrusage(RUSAGE_SELF, &readings.self_before);
  fleet.join(endpoint);
  readings.joined = Clock::now();

  fleet.run();
  readings.driver_cpu_at_end = process_cpu(driver.pid());
  readings.counters_at_end = fleet.counters();
  ::getrusage(RUSAGE_SELF, &readings.self_after);
  if (fleet.welcomed() < o.actors) {
    // The minimum is that of the actors that joined, since the refused never train; simulated
    // after the run, so that the joined ones are not kept silent meanwhile.
    Options joined = o;
    joined.actors = fleet.welcomed();
    schedule = simulate_schedule(joined, context);
  }
  driver.wait(120);
  if (driver.exit_code() != 0) driver.fail("the driver exited with code " + std::to_string(driver.exit_code()));
  if (!fleet.first_assign()) driver.fail("no job was assigned");

  readings.results = dir + "/out/results.jsonl";
  json out = figures(o, schedule, fleet, driver, readings);
  if (!o.keep.empty()) {
    std::error_code ec;
    fs::create_directories(fs::path(o.keep).parent_path(), ec);
    fs::rename(dir, o.keep, ec);
    if (ec) fs::copy(dir, o.keep, fs::copy_options::recursive, ec);
    out["kept"] = o.keep;
  }
  std::printf("%s\n", out.dump().c_str());
  return 0;
}

}  // namespace
}  // namespace packtune::bench

int main(int argc, char** argv) {
  const auto options = packtune::bench::parse_options(argc, argv);
  try {
    return packtune::bench::run(options);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "load_bench: %s\n", e.what());
    return 1;
  }
}
