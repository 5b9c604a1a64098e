// load_bench's figures computed from what the run measured, rounded as docs/benchmarks.md quotes them.
#include "bench/load_bench/figures.hpp"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <thread>
#include <vector>

namespace packtune::bench {
namespace {

using json = nlohmann::json;

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<std::size_t>(p * static_cast<double>(v.size())))];
}

std::int64_t count_lines(const std::string& path) {
  std::ifstream in(path);
  std::int64_t n = 0;
  std::string line;
  while (std::getline(in, line)) ++n;
  return n;
}

double round_to(double v, int digits) {
  const double f = std::pow(10.0, digits);
  return std::round(v * f) / f;
}

}  // namespace

double load_average() {
  double load = 0;
  std::ifstream("/proc/loadavg") >> load;
  return load;
}

json figures(const Options& o, const tuners::SimulationSummary& schedule, const Fleet& fleet,
             const DriverProcess& driver, const RunReadings& readings) {
  const auto& at_end = readings.counters_at_end;
  const auto& cpu_at_end = readings.driver_cpu_at_end;
  const auto& self_before = readings.self_before;
  const auto& self_after = readings.self_after;
  const auto started = readings.started;
  const auto joined = readings.joined;
  const double simulate_seconds = readings.simulate_seconds;
  const double load_before = readings.load_before;

  const double wall = seconds(fleet.shutdown_at() - *fleet.first_assign());
  const double minimum = schedule.time * o.time_scale;
  const double work_bound = schedule.total_budget * o.time_scale / fleet.welcomed();
  const double window_cpu = cpu_at_end.total() - fleet.cpu_at_first_assign().total();
  const std::int64_t messages = at_end.total() - fleet.counters_at_first_assign().total();
  const auto& usage = driver.usage();
  const double driver_cpu_total = static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
                                  static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6;
  auto cpu_of = [](const struct rusage& r) {
    return static_cast<double>(r.ru_utime.tv_sec + r.ru_stime.tv_sec) +
           static_cast<double>(r.ru_utime.tv_usec + r.ru_stime.tv_usec) / 1e6;
  };
  const std::int64_t rows = count_lines(readings.results);

  json out;
  out["actors"] = o.actors;
  if (o.nodes > 0) {
    out["nodes"] = o.nodes;
    out["actors_per_node"] = o.actors_per_node;
  }
  out["connections"] = fleet.connections();  // to the driver: one per node, else one per actor
  // Over the driver's connection cap (--driver-open-files): the actors that trained, and those
  // refused throughout, which the minimum leaves out.
  out["joined_actors"] = fleet.welcomed();
  out["refused_actors"] = o.actors - fleet.welcomed();
  out["ever_joined_actors"] = fleet.ever_welcomed();  // joined_actors plus any that lost their place
  out["trained_actors"] = fleet.trained();
  out["refused_connections"] = fleet.refusals();      // handshakes the driver answered no
  out["rejoins"] = fleet.rejoins();
  if (o.driver_open_files > 0) out["driver_open_files"] = o.driver_open_files;
  out["trials"] = o.trials;
  out["time_scale"] = o.time_scale;
  out["sampler"] = o.sampler;
  out["budgets"] = {{"min", o.min_budget}, {"max", o.max_budget}, {"eta", o.eta}, {"report_every", o.report_every}};
  out["jobs"] = at_end.assigns;
  out["simulated_jobs"] = schedule.jobs;
  out["reports"] = rows;
  out["messages"] = messages;
  out["wall_seconds"] = round_to(wall, 3);
  out["minimum_seconds"] = round_to(minimum, 3);
  out["work_bound_seconds"] = round_to(work_bound, 3);
  out["overhead"] = round_to(wall / minimum - 1, 5);
  out["messages_per_second"] = round_to(static_cast<double>(messages) / wall, 1);
  out["driver_cpu_seconds"] = round_to(window_cpu, 2);
  out["driver_cpu_us_per_message"] = round_to(window_cpu * 1e6 / static_cast<double>(std::max<std::int64_t>(1, messages)), 2);
  out["driver_cpu_share"] = round_to(window_cpu / wall, 4);
  out["driver_peak_rss_mb"] = round_to(static_cast<double>(usage.ru_maxrss) / 1024.0, 1);
  out["driver_total_cpu_seconds"] = round_to(driver_cpu_total, 2);
  out["join_seconds"] = round_to(seconds(joined - started), 3);
  out["ready_to_first_assign_seconds"] = round_to(seconds(*fleet.first_assign() - fleet.ready_at()), 3);
  if (fleet.all_assigned()) out["first_to_last_start_seconds"] = round_to(seconds(*fleet.all_assigned() - *fleet.first_assign()), 3);
  out["shutdown_to_exit_seconds"] = round_to(seconds(driver.exited_at() - fleet.shutdown_at()), 3);
  const auto& gaps = fleet.idle_gaps();
  double gap_sum = 0;
  for (double g : gaps) gap_sum += g;
  out["idle_gap_ms"] = {{"mean", round_to(gaps.empty() ? 0 : gap_sum / static_cast<double>(gaps.size()) * 1e3, 3)},
                        {"p50", round_to(percentile(gaps, 0.5) * 1e3, 3)},
                        {"p99", round_to(percentile(gaps, 0.99) * 1e3, 3)},
                        {"max", round_to(percentile(gaps, 1.0) * 1e3, 3)}};
  // What the actors waited for the driver, as actor-seconds and as a share of the actors'
  // time: the control plane's cost measured directly, without the difference between the
  // driver's schedule and the simulated one that `overhead` also holds. The first jobs' part
  // is the first wave (docs/benchmarks.md).
  const double actor_seconds = wall * static_cast<double>(std::max(1, fleet.trained()));
  out["idle_actor_seconds"] = round_to(gap_sum, 3);
  out["idle_share"] = round_to(gap_sum / actor_seconds, 5);
  out["first_job_idle_actor_seconds"] = round_to(fleet.first_job_idle_seconds(), 3);
  out["actor_timer_lateness_ms"] = {{"mean", round_to(fleet.mean_lateness() * 1e3, 3)},
                                    {"max", round_to(fleet.max_lateness() * 1e3, 3)}};
  out["bench_cpu_seconds"] = round_to(cpu_of(self_after) - cpu_of(self_before), 2);
  out["simulate_seconds"] = round_to(simulate_seconds, 2);
  out["cores"] = std::thread::hardware_concurrency();
  out["load_average"] = {{"before", load_before}, {"after", load_average()}};
  out["driver_quiet"] = o.driver_quiet;
  return out;
}

}  // namespace packtune::bench
