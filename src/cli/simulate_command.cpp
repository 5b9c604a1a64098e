#include "cli/simulate_command.hpp"

#include <cmath>
#include <iostream>
#include <charconv>
#include <optional>

#include <boost/program_options.hpp>
#include <nlohmann/json.hpp>

#include "cli/option_values.hpp"
#include "util/subcommand.hpp"
#include "cli/exec_objective.hpp"
#include "experiment/experiment_config.hpp"
#include "packtune/error.hpp"
#include "tuners/simulate/objective.hpp"
#include "tuners/plugins/plugin_loader.hpp"
#include "tuners/simulate/simulator.hpp"
#include "tuners/tuner_registry.hpp"
#include "tuners/tuner_settings.hpp"
#include "util/line_process.hpp"

namespace packtune::cli {

namespace po = boost::program_options;
using nlohmann::json;
using tuners::number_text;
// Keys print in the order the documentation shows them.
using ordered = nlohmann::ordered_json;

namespace {

// The few keys of an experiment config that a simulation needs, read by the config table as
// `packtune run` reads them; the other keys (data, model, actors, ...) are left to `run`.
struct SimulationConfig {
  std::string tuner;
  std::optional<std::int64_t> trials;
  json settings = json::object();
  std::vector<std::string> plugins;
  std::optional<double> min_budget;
  std::optional<double> max_budget;
  std::optional<double> report_every;
  std::optional<std::string> budget_unit;
  std::optional<tuners::Mode> mode;
  std::optional<std::string> metric;
  std::optional<std::uint64_t> seed;
  tuners::SearchSpace space;
};

SimulationConfig read_simulation_config(const std::string& path) {
  const auto c = load_config_keys(path, {"seed", "metric", "mode", "budget", "tuner", "tuner_plugin", "space"});
  const auto& root = c.source;
  SimulationConfig s;
  const bool named = root.contains("tuner") && (root["tuner"].is_string() || root["tuner"].contains("name"));
  if (named) s.tuner = c.tuner;
  if (c.trials >= 0) s.trials = c.trials;
  s.settings = c.tuner_settings;
  if (!c.tuner_plugin.empty()) s.plugins.push_back(c.tuner_plugin);
  if (root.contains("budget")) {
    const auto& b = root.at("budget");
    if (b.contains("max")) s.max_budget = c.max_budget;
    if (b.contains("min")) s.min_budget = c.min_budget;
    if (b.contains("report_every")) s.report_every = c.report_every;
    if (b.contains("unit")) s.budget_unit = c.budget_unit;
  }
  if (root.contains("metric")) s.metric = c.metric;
  if (root.contains("metric") || root.contains("mode")) s.mode = c.mode;
  if (root.contains("seed")) s.seed = c.seed;
  s.space = c.space;
  return s;
}

// Appends the shortest text that reads back as `v`, like json::dump but without building a
// json value: a simulation prints hundreds of thousands of these.
void append_number(std::string& out, double v) {
  if (!std::isfinite(v)) {
    out += "null";
    return;
  }
  char buffer[32];
  const bool whole = v == std::floor(v) && std::abs(v) < 1e15;
  const auto result = whole ? std::to_chars(buffer, buffer + sizeof buffer, static_cast<std::int64_t>(v))
                            : std::to_chars(buffer, buffer + sizeof buffer, v);
  out.append(buffer, result.ptr);
}

// "KEY=VALUE": VALUE as JSON when it parses (3, 0.5, true, "x"), else as a string.
std::pair<std::string, json> setting(const std::string& assignment) {
  const auto eq = assignment.find('=');
  if (eq == std::string::npos || eq == 0) {
    throw InputError("--tuner-setting: expected KEY=VALUE, got \"" + assignment + "\"");
  }
  const std::string value = assignment.substr(eq + 1);
  json parsed = json::parse(value, nullptr, false);
  if (parsed.is_discarded()) parsed = value;
  return {assignment.substr(0, eq), parsed};
}

void append_event(std::string& out, const tuners::SimulationEvent& e) {
  const bool start = e.kind == tuners::SimulationEvent::Kind::Start;
  out += start ? "{\"event\":\"start\",\"trial\":" : "{\"event\":\"result\",\"trial\":";
  out += std::to_string(e.trial);
  out += ",\"budget\":";
  append_number(out, e.budget);
  if (start && e.from_trial >= 0) {  // an exploit: lineage and the explored config
    out += ",\"from_trial\":" + std::to_string(e.from_trial) + ",\"from_budget\":";
    append_number(out, e.from_budget);
    out += ",\"config\":" + tuners::to_json(e.config).dump();
  }
  if (!start) {
    out += ",\"metric\":";
    append_number(out, e.metric);
    if (e.stopped) out += ",\"stopped\":true";
  }
  out += ",\"t\":";
  append_number(out, e.time);
  out += "}\n";
}

const std::string kExecPrefix = "exec:";
const std::string kExecChoice = "exec:CMD";  // as messages name it

bool is_exec(const std::string& spec) { return spec.compare(0, kExecPrefix.size(), kExecPrefix) == 0; }

// table:FILE and synthetic are the tuner library's; exec:CMD starts a process, which tuners/
// does not, so it is made here.
std::unique_ptr<tuners::Objective> make_objective(const std::string& spec, const tuners::TunerContext& context,
                                                  double timeout_seconds) {
  if (!is_exec(spec)) return tuners::make_objective(spec, context, kExecChoice);
  // An interrupted simulation must not leave behind what CMD started.
  util::LineProcess::end_children_on_termination_signals();
  return std::make_unique<ExecObjective>(spec.substr(kExecPrefix.size()), timeout_seconds);
}

}  // namespace

int run_simulate_command(const std::vector<std::string>& args) {
  util::Subcommand command("simulate",
                           "packtune simulate [CONFIG] --objective table:FILE|synthetic|exec:CMD [--tuner NAME] "
                           "[--eta E] [--min-budget m] [--max-budget M] [--trials N] [--mode min|max] "
                           "[--workers W] [--seed S] [--objective-timeout SECONDS] [--json]");
  command.positional("config", "CONFIG",
                     "experiment config (optional): tuner, tuner_plugin, budget, metric, mode, space, seed");
  command.options()
      ("objective", po::value<std::string>(), "table:FILE (a CSV trial,budget,metric), synthetic, or exec:CMD "
                                               "(CMD answers a JSON line per evaluation; docs/tuners.md) (required)")
      ("objective-timeout", po::value<std::string>(), "seconds exec:CMD may take for an answer (default 60)")
      ("tuner", po::value<std::string>(), "tuner name (or the config's tuner)")
      ("tuner-plugin", po::value<std::vector<std::string>>(), "shared library with more tuners (repeatable)")
      ("tuner-setting", po::value<std::vector<std::string>>(), "KEY=VALUE tuner setting, e.g. s=1 (repeatable)")
      ("eta", po::value<std::string>(), "reduction factor (the same as --tuner-setting eta=E)")
      ("min-budget", po::value<std::string>(), "smallest budget (default: the max budget)")
      ("max-budget", po::value<std::string>(), "largest budget")
      ("trials", po::value<std::string>(), "trial limit; 0 or none: the tuner's own count (one Hyperband sweep)")
      ("mode", po::value<std::string>(), "min or max (default: the config's, else max)")
      ("workers", po::value<std::string>()->default_value("1"), "simulated workers")
      ("seed", po::value<std::string>(), "seed of the tuner and the synthetic objective (default 0)")
      ("report-every", po::value<std::string>(), "budget between intermediate reports (default 0: none)")
      ("json", "print one JSON object per event, then a summary");
  if (!command.parse(args)) return 0;
  const auto& vm = command.values();

  SimulationConfig config;
  if (const auto path = option_text(vm, "config")) config = read_simulation_config(*path);
  const auto objective_spec = option_text(vm, "objective");
  if (!objective_spec) {
    throw InputError("--objective: missing; expected " + tuners::objective_choices(kExecChoice));
  }
  const auto timeout_option = option_number(vm, "objective-timeout");
  if (timeout_option && !is_exec(*objective_spec)) {
    throw InputError("--objective-timeout: only for --objective " + kExecChoice);
  }
  const double objective_timeout = timeout_option.value_or(60);
  if (!std::isfinite(objective_timeout) || objective_timeout <= 0) {
    throw InputError("--objective-timeout: expected a number of seconds > 0");
  }

  tuners::TunerContext context;
  context.space = config.space;
  if (const auto t = option_text(vm, "tuner")) config.tuner = *t;
  if (config.tuner.empty()) {
    throw InputError("--tuner: missing; expected a tuner name here or as tuner.name in CONFIG");
  }
  if (const auto m = option_text(vm, "mode")) config.mode = tuners::parse_mode(*m);
  context.mode = config.mode.value_or(tuners::Mode::Max);
  // The config's metric names the numbers, whichever way --mode ranks them.
  context.metric = config.metric.value_or(context.mode == tuners::Mode::Max ? "val_accuracy" : "val_loss");
  if (const auto v = option_number(vm, "max-budget")) config.max_budget = v;
  if (const auto v = option_number(vm, "min-budget")) config.min_budget = v;
  if (!config.max_budget) {
    throw InputError("--max-budget: missing; expected the largest budget here or as budget.max "
                     "in CONFIG");
  }
  context.max_budget = *config.max_budget;
  context.min_budget = config.min_budget.value_or(context.max_budget);
  if (const auto v = option_integer(vm, "trials", 0)) config.trials = v;
  context.max_trials = config.trials.value_or(0);
  if (const auto v = option_integer(vm, "seed", 0)) config.seed = static_cast<std::uint64_t>(*v);
  context.seed = config.seed.value_or(0);
  context.settings = config.settings;
  // A config in steps floors the tuner's budget settings at a step, as `packtune run` does
  // (in epochs, a step depends on the data, which a simulation does not read).
  if (config.budget_unit) context.budget_unit = *config.budget_unit;
  if (context.budget_unit == "steps") context.step_budget = 1;
  if (vm.count("tuner-setting")) {
    for (const auto& a : vm["tuner-setting"].as<std::vector<std::string>>()) {
      const auto [key, value] = setting(a);
      context.settings[key] = value;
    }
  }
  if (const auto eta = option_text(vm, "eta")) {
    json parsed = json::parse(*eta, nullptr, false);
    context.settings["eta"] = parsed.is_discarded() ? json(*eta) : parsed;
  }

  tuners::SimulationOptions sim;
  sim.workers = static_cast<int>(*option_integer(vm, "workers", 1));
  if (const auto v = option_number(vm, "report-every")) config.report_every = v;
  sim.report_every = config.report_every.value_or(0);
  if (sim.report_every > 0) tuners::check_budget_setting(context, "--report-every", sim.report_every);

  if (vm.count("tuner-plugin")) {
    for (const auto& p : vm["tuner-plugin"].as<std::vector<std::string>>()) config.plugins.push_back(p);
  }
  for (const auto& p : config.plugins) tuners::load_tuner_plugin(p);

  auto tuner = tuners::TunerRegistry::instance().create(config.tuner, context);
  for (const auto& warning : tuner->warnings()) std::cerr << "packtune: warning: " << warning << "\n";
  auto objective = make_objective(*objective_spec, context, objective_timeout);
  sim.max_budget = context.max_budget;
  tuners::Simulator simulator(*tuner, *objective, context.mode, sim);

  const bool as_json = vm.count("json") > 0;
  std::string buffer;
  const auto flush = [&buffer] {
    std::cout.write(buffer.data(), static_cast<std::streamsize>(buffer.size()));
    buffer.clear();
  };
  const auto summary = simulator.run([&](const tuners::SimulationEvent& e) {
    if (!as_json) return;
    append_event(buffer, e);
    if (buffer.size() > (1 << 16)) flush();
  });

  if (as_json) {
    ordered line = {{"event", "summary"},
                 {"tuner", summary.tuner},
                 {"objective", objective->description()},
                 {"workers", sim.workers},
                 {"trials", summary.trials},
                 {"jobs", summary.jobs},
                 {"stopped", summary.stopped},
                 {"best_trial", summary.best_trial},
                 {"best_metric", number_json(summary.best_metric)},
                 {"best_budget", number_json(summary.best_budget)},
                 {"best_config", ordered(tuners::to_json(summary.best_config))},
                 {"time", number_json(summary.time)},
                 {"total_budget", number_json(summary.total_budget)}};
    buffer += line.dump() + "\n";
    flush();
    std::cout.flush();
    return 0;
  }
  std::cout << "simulated " << summary.tuner << " on " << objective->description() << " with "
            << sim.workers << (sim.workers == 1 ? " worker" : " workers") << ": "
            << summary.trials << " trials, " << summary.jobs << " jobs";
  if (summary.stopped > 0) std::cout << ", " << summary.stopped << " stopped early";
  std::cout << "\n";
  if (summary.best_trial >= 0) {
    std::cout << "best trial " << summary.best_trial << ": " << context.metric << " "
              << number_text(summary.best_metric) << " at budget "
              << number_text(summary.best_budget) << ", config "
              << tuners::to_json(summary.best_config).dump() << "\n";
  }
  std::cout << "simulated time " << number_text(summary.time) << ", total budget "
            << number_text(summary.total_budget) << "\n";
  return 0;
}

}  // namespace packtune::cli
