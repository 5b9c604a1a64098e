#include "cli/tuning_commands.hpp"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <optional>

#include <boost/program_options.hpp>
#include <nlohmann/json.hpp>

#include "cli/command_line.hpp"
#include "packtune/error.hpp"
#include "tuners/brackets.hpp"
#include "tuners/objective.hpp"
#include "tuners/plugin_loader.hpp"
#include "tuners/simulator.hpp"
#include "tuners/tuner_registry.hpp"
#include "tuners/tuner_settings.hpp"

namespace packtune::cli {
namespace {

namespace po = boost::program_options;
using nlohmann::json;
using tuners::number_text;
// Keys print in the order the documentation shows them.
using ordered = nlohmann::ordered_json;

// --- parsing -------------------------------------------------------------------------------

std::optional<std::string> text(const po::variables_map& vm, const char* name) {
  if (!vm.count(name)) return std::nullopt;
  return vm[name].as<std::string>();
}

// Numbers are read here rather than by program_options so that a bad one gets a message
// naming the flag and what it expects.
std::optional<double> number(const po::variables_map& vm, const char* name) {
  const auto t = text(vm, name);
  if (!t) return std::nullopt;
  double v = 0;
  const auto [end, ec] = std::from_chars(t->data(), t->data() + t->size(), v);
  if (ec != std::errc() || end != t->data() + t->size() || !std::isfinite(v)) {
    throw InputError(std::string("--") + name + ": expected a number, got \"" + *t + "\"");
  }
  return v;
}

std::optional<std::int64_t> integer(const po::variables_map& vm, const char* name,
                                    std::int64_t minimum) {
  const auto t = text(vm, name);
  if (!t) return std::nullopt;
  std::int64_t v = 0;
  const auto [end, ec] = std::from_chars(t->data(), t->data() + t->size(), v);
  if (ec != std::errc() || end != t->data() + t->size() || v < minimum) {
    throw InputError(std::string("--") + name + ": expected an integer >= " +
                     std::to_string(minimum) + ", got \"" + *t + "\"");
  }
  return v;
}

// --- output --------------------------------------------------------------------------------

// Whole budgets print as integers ("budget": 1, not 1.0), as in the paper's tables.
ordered number_json(double v) {
  if (!std::isfinite(v)) return nullptr;  // JSON has no NaN; a failed trial's metric is null
  if (v == std::floor(v) && std::abs(v) < 1e15) return static_cast<std::int64_t>(v);
  return v;
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

// --- brackets ------------------------------------------------------------------------------

void print_usage(const std::string& usage, const po::options_description& options) {
  std::cout << "usage: " << usage << "\n\n" << options;
}

}  // namespace

int run_brackets_command(const std::vector<std::string>& args) {
  po::options_description options("options");
  options.add_options()
      ("help,h", "print this help")
      ("tuner", po::value<std::string>()->default_value("hyperband"), "hyperband (the only tuner with a fixed schedule)")
      ("min-budget", po::value<std::string>(), "smallest budget (required)")
      ("max-budget", po::value<std::string>(), "largest budget (required)")
      ("eta", po::value<std::string>()->default_value("3"), "reduction factor, an integer >= 2")
      ("json", "print {\"brackets\": [{\"s\": ..., \"rungs\": [{\"n\": ..., \"budget\": ...}]}]}");
  const auto vm = parse_command_line("brackets", args, options);
  if (vm.count("help")) {
    print_usage("packtune brackets --tuner hyperband --min-budget m --max-budget M --eta E [--json]",
                options);
    return 0;
  }
  const auto tuner = *text(vm, "tuner");
  if (tuner != "hyperband") {
    throw InputError("--tuner: brackets prints Hyperband's fixed schedule; expected hyperband, "
                     "got \"" + tuner + "\"");
  }
  const auto min_budget = number(vm, "min-budget");
  const auto max_budget = number(vm, "max-budget");
  if (!min_budget) throw InputError("--min-budget: missing; expected the smallest budget");
  if (!max_budget) throw InputError("--max-budget: missing; expected the largest budget");
  const auto eta_value = number(vm, "eta");
  if (*eta_value < 2 || *eta_value != std::floor(*eta_value) || *eta_value > 1e6) {
    throw InputError("--eta: expected an integer >= 2, got " + *text(vm, "eta"));
  }
  const auto eta = static_cast<std::int64_t>(*eta_value);
  const auto brackets = tuners::hyperband_brackets(*min_budget, *max_budget, eta);

  if (vm.count("json")) {
    ordered out = ordered::array();
    for (const auto& b : brackets) {
      ordered rungs = ordered::array();
      for (const auto& r : b.rungs) rungs.push_back({{"n", r.n}, {"budget", number_json(r.budget)}});
      out.push_back({{"s", b.s}, {"rungs", std::move(rungs)}});
    }
    std::cout << ordered{{"brackets", std::move(out)}}.dump() << "\n";
    return 0;
  }
  const int s_max = brackets.front().s;
  const double ratio = *max_budget / *min_budget;
  std::cout << "Hyperband: min budget " << number_text(*min_budget) << ", max budget "
            << number_text(*max_budget) << ", eta " << eta << "; R = " << number_text(ratio)
            << ", s_max = " << s_max << ", B = (s_max+1)R = " << number_text((s_max + 1) * ratio)
            << " min budgets per bracket\n";
  for (const auto& b : brackets) {
    std::cout << "bracket s=" << b.s << ":";
    for (std::size_t i = 0; i < b.rungs.size(); ++i) {
      std::cout << (i ? ", " : " ") << b.rungs[i].n << " x " << number_text(b.rungs[i].budget);
    }
    std::cout << "  (configs x budget; total " << number_text(b.total_budget()) << ")\n";
  }
  return 0;
}

// --- simulate ------------------------------------------------------------------------------

namespace {

// The few keys of an experiment config that a simulation needs, read leniently: the full
// config (data, model, actors, ...) is checked by `packtune run`, not here.
struct SimulationConfig {
  std::string tuner;
  std::optional<std::int64_t> trials;
  json settings = json::object();
  std::vector<std::string> plugins;
  std::optional<double> min_budget;
  std::optional<double> max_budget;
  std::optional<double> report_every;
  std::optional<tuners::Mode> mode;
  std::optional<std::string> metric;
  std::optional<std::uint64_t> seed;
  tuners::SearchSpace space;
};

double config_number(const json& obj, const char* key, const std::string& where) {
  const auto& v = obj.at(key);
  if (!v.is_number() || !std::isfinite(v.get<double>())) {
    throw InputError(where + "." + key + ": expected a number, got " + v.dump());
  }
  return v.get<double>();
}

std::string config_string(const json& v, const std::string& where) {
  if (!v.is_string()) throw InputError(where + ": expected a string, got " + v.dump());
  return v.get<std::string>();
}

const json& config_object(const json& v, const std::string& where) {
  if (!v.is_object()) throw InputError(where + ": expected an object, got " + v.dump());
  return v;
}

SimulationConfig read_simulation_config(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw InputError(path + ": cannot open the config file");
  json root;
  try {
    root = json::parse(in);
  } catch (const json::exception& e) {
    throw InputError(path + ": not valid JSON: " + e.what());
  }
  config_object(root, path);
  SimulationConfig c;
  if (root.contains("tuner")) {
    const auto& t = root.at("tuner");
    if (t.is_string()) {
      c.tuner = t.get<std::string>();
    } else {
      for (const auto& [key, value] : config_object(t, "tuner").items()) {
        if (key == "name") {
          c.tuner = config_string(value, "tuner.name");
        } else if (key == "trials") {
          if (!value.is_number_integer() || value.get<std::int64_t>() < 0) {
            throw InputError("tuner.trials: expected an integer >= 0 (0: the tuner's whole schedule), got " +
                             value.dump());
          }
          c.trials = value.get<std::int64_t>();
        } else {
          c.settings[key] = value;
        }
      }
    }
  }
  if (root.contains("tuner_plugin")) {
    c.plugins.push_back(config_string(root.at("tuner_plugin"), "tuner_plugin"));
  }
  if (root.contains("budget")) {
    const auto& b = config_object(root.at("budget"), "budget");
    if (b.contains("max")) c.max_budget = config_number(b, "max", "budget");
    if (b.contains("min")) c.min_budget = config_number(b, "min", "budget");
    if (b.contains("report_every")) c.report_every = config_number(b, "report_every", "budget");
  }
  if (root.contains("metric")) {
    const auto metric = config_string(root.at("metric"), "metric");
    c.metric = metric;
    c.mode = metric == "val_accuracy" ? tuners::Mode::Max : tuners::Mode::Min;
  }
  if (root.contains("mode")) c.mode = tuners::parse_mode(config_string(root.at("mode"), "mode"));
  if (root.contains("seed")) {
    const auto& s = root.at("seed");
    if (!s.is_number_integer() || s.get<std::int64_t>() < 0) {
      throw InputError("seed: expected an integer >= 0, got " + s.dump());
    }
    c.seed = s.get<std::uint64_t>();
  }
  if (root.contains("space")) c.space = tuners::SearchSpace::from_json(root.at("space"), "space");
  return c;
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
  if (!start) {
    out += ",\"metric\":";
    append_number(out, e.metric);
    if (e.stopped) out += ",\"stopped\":true";
  }
  out += ",\"t\":";
  append_number(out, e.time);
  out += "}\n";
}

}  // namespace

int run_simulate_command(const std::vector<std::string>& args) {
  po::options_description options("options");
  options.add_options()
      ("help,h", "print this help")
      ("config", po::value<std::string>(), "experiment config (optional): tuner, tuner_plugin, budget, metric, mode, space, seed")
      ("objective", po::value<std::string>(), "table:FILE (a CSV trial,budget,metric) or synthetic (required)")
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
  po::positional_options_description positional;
  positional.add("config", 1);
  const auto vm = parse_command_line("simulate", args, options, positional);
  if (vm.count("help")) {
    print_usage("packtune simulate [CONFIG] --objective table:FILE|synthetic [--tuner NAME] "
                "[--eta E] [--min-budget m] [--max-budget M] [--trials N] [--mode min|max] "
                "[--workers W] [--seed S] [--json]", options);
    return 0;
  }

  SimulationConfig config;
  if (const auto path = text(vm, "config")) config = read_simulation_config(*path);
  const auto objective_spec = text(vm, "objective");
  if (!objective_spec) throw InputError("--objective: missing; expected table:FILE or synthetic");

  tuners::TunerContext context;
  context.space = config.space;
  if (const auto t = text(vm, "tuner")) config.tuner = *t;
  if (config.tuner.empty()) {
    throw InputError("--tuner: missing; expected a tuner name here or as tuner.name in CONFIG");
  }
  if (const auto m = text(vm, "mode")) config.mode = tuners::parse_mode(*m);
  context.mode = config.mode.value_or(tuners::Mode::Max);
  // The config's metric names the numbers, whichever way --mode ranks them.
  context.metric = config.metric.value_or(context.mode == tuners::Mode::Max ? "val_accuracy" : "val_loss");
  if (const auto v = number(vm, "max-budget")) config.max_budget = v;
  if (const auto v = number(vm, "min-budget")) config.min_budget = v;
  if (!config.max_budget) {
    throw InputError("--max-budget: missing; expected the largest budget here or as budget.max "
                     "in CONFIG");
  }
  context.max_budget = *config.max_budget;
  context.min_budget = config.min_budget.value_or(context.max_budget);
  if (const auto v = integer(vm, "trials", 0)) config.trials = v;
  context.max_trials = config.trials.value_or(0);
  if (const auto v = integer(vm, "seed", 0)) config.seed = static_cast<std::uint64_t>(*v);
  context.seed = config.seed.value_or(0);
  context.settings = config.settings;
  if (vm.count("tuner-setting")) {
    for (const auto& a : vm["tuner-setting"].as<std::vector<std::string>>()) {
      const auto [key, value] = setting(a);
      context.settings[key] = value;
    }
  }
  if (const auto eta = text(vm, "eta")) {
    json parsed = json::parse(*eta, nullptr, false);
    context.settings["eta"] = parsed.is_discarded() ? json(*eta) : parsed;
  }

  tuners::SimulationOptions sim;
  sim.workers = static_cast<int>(*integer(vm, "workers", 1));
  if (const auto v = number(vm, "report-every")) config.report_every = v;
  sim.report_every = config.report_every.value_or(0);

  if (vm.count("tuner-plugin")) {
    for (const auto& p : vm["tuner-plugin"].as<std::vector<std::string>>()) config.plugins.push_back(p);
  }
  for (const auto& p : config.plugins) tuners::load_tuner_plugin(p);

  auto tuner = tuners::TunerRegistry::instance().create(config.tuner, context);
  for (const auto& warning : tuner->warnings()) std::cerr << "packtune: warning: " << warning << "\n";
  auto objective = tuners::make_objective(*objective_spec, context);
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
