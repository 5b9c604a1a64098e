#include "cli/run_command.hpp"

#include <ctime>
#include <filesystem>
#include <iostream>
#include <type_traits>

#include <boost/program_options.hpp>

#include "cli/actor_launch.hpp"
#include "cli/live_export.hpp"
#include "cli/option_values.hpp"
#include "cli/tracker_export.hpp"
#include "util/subcommand.hpp"
#include "datasets/data_fingerprint.hpp"
#include "driver/driver.hpp"
#include "driver/journal.hpp"
#include "experiment/experiment_config.hpp"
#include "experiment/results_folder.hpp"
#include "experiment/results_writer.hpp"
#include "packtune/error.hpp"
#include "tuners/plugins/plugin_loader.hpp"

namespace packtune::cli {
namespace {

namespace po = boost::program_options;

// A flag's value; one whose rule says its value is optional (--mlflow) takes "" without one.
template <class CliType>
po::typed_value<CliType>* flag_value(const config_table::FlagRule& rule) {
  auto* value = po::value<CliType>();
  if constexpr (std::is_same_v<CliType, std::string>) {
    if (rule.kind == config_table::FlagRule::Kind::OptionalValue) value->implicit_value("", "./mlruns");
  }
  return value;
}

// The options that take a value, for join_optional_value: the word after --mlflow is its URI
// only where the command line has CONFIG or --resume DIR besides.
std::vector<std::string> options_with_values() {
  std::vector<std::string> out = {"--out", "-o", "--resume"};
  using namespace config_table;
#define PACKTUNE_CONFIG_KEY(...)
#define PACKTUNE_CONFIG_BLOCK(...)
#define PACKTUNE_CONFIG_FLAG(member, flag, CliType, rule, help) \
  if ((rule).kind != FlagRule::Kind::OptionalValue) out.push_back("--" flag);
#include "experiment/config_keys.def"
#undef PACKTUNE_CONFIG_KEY
#undef PACKTUNE_CONFIG_BLOCK
#undef PACKTUNE_CONFIG_FLAG
  return out;
}

std::string default_out_dir(const std::string& name) {
  char stamp[32];
  const std::time_t now = std::time(nullptr);
  std::strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", std::localtime(&now));
  return "runs/" + name + "-" + stamp;
}

// `packtune run --resume DIR [CONFIG]`: the config comes from the journal's header; a CONFIG or
// an override given anyway must not change what the experiment is.
ExperimentConfig resumed_config(const std::string& dir, const po::variables_map& vm,
                                const Overrides& overrides) {
  if (!std::filesystem::is_directory(dir)) {
    throw InputError("--resume " + dir + ": no such folder; give the --out of a packtune run");
  }
  const auto journal = results_folder::path(dir, results_folder::kJournal);
  if (!std::filesystem::exists(journal)) {
    throw InputError("--resume " + dir + ": no " + std::string(results_folder::kJournal) +
                     " there; is it the --out of a packtune run?");
  }
  const auto header = Journal::read_header(journal);
  if (!header.contains("config")) {
    throw InputError("--resume " + dir + ": " + std::string(results_folder::kJournal) +
                     " has no header; the experiment cannot be resumed");
  }
  auto ran = header["config"];
  // A run named before names had to be plain (a config file `my exp.json` named it "my exp")
  // resumes under the plain form of its name: its folder is DIR, so the name only labels it.
  if (ran.contains("name") && ran["name"].is_string()) {
    const auto name = ran["name"].get<std::string>();
    if (experiment_name_from(name) != name) ran["name"] = experiment_name_from(name);
  }
  ExperimentConfig config;
  if (vm.count("config")) {
    config = load_config(vm["config"].as<std::string>());
    apply_overrides(config, overrides);
  } else {
    config = parse_config(ran, results_folder::path(dir, results_folder::kJournal));
    apply_overrides(config, overrides);
  }
  // The threads an actor trains with can change a trial's sums, so they are the run's own:
  // --actors may change on resume, the threads of each actor stay (an explicit other value
  // is refused below).
  if (config.threads_per_actor == 0 && ran.contains("threads_per_actor") && ran["threads_per_actor"].is_number_integer()) {
    config.threads_per_actor = ran["threads_per_actor"].get<int>();
  }
  record_as_run(config);
  // What the recorded config means to this packtune: keys a later version records (task,
  // data.format, ...) take the values an older run had by default, so that such a run still
  // resumes; an override or another config file still differs from it.
  auto baseline = parse_config(ran, results_folder::path(dir, results_folder::kJournal));
  record_as_run(baseline);
  // A run whose config as run has no threads (it had no local actors, or ran before packtune
  // recorded them) takes what this machine gives.
  if (!ran.contains("threads_per_actor")) {
    config.source.erase("threads_per_actor");
    baseline.source.erase("threads_per_actor");
  }
  const auto differ = resume_differences(baseline.source, config.source);
  if (!differ.empty()) {
    std::string keys;
    for (const auto& k : differ) keys += (keys.empty() ? "" : ", ") + k;
    throw InputError("--resume " + dir + ": the config differs from the one the experiment ran with in " +
                     keys + "; resume with the same config, or start a new experiment with another --out");
  }
  return config;
}

// `--resume`: the data files as they are now against the fingerprints the journal recorded
// last, before the data is read in full (validate) and before anything in DIR changes. A change
// is refused unless the user allows it; the driver journals what it was given.
void check_resumed_data(const ExperimentConfig& config, bool allow_changed, DriverOptions& driver) {
  const auto now = datasets::fingerprint_data(config.data);
  driver.data_files = now;
  const auto journal = results_folder::path(driver.out_dir, results_folder::kJournal);
  const auto recorded = Journal::recorded_data_files(journal);
  if (!recorded) {
    driver.data_unchecked = true;
    return;
  }
  std::vector<datasets::FileFingerprint> was;
  try {
    was = recorded->get<std::vector<datasets::FileFingerprint>>();
  } catch (const nlohmann::json::exception& e) {
    throw InputError(journal + ": data_files: not a list of fingerprints (" + e.what() + ")");
  } catch (const InputError& e) {
    throw InputError(journal + ": " + e.what());
  }
  const auto changes = datasets::data_changes(was, now);
  if (changes.empty()) return;
  if (!allow_changed) {
    std::string list;
    for (const auto& c : changes) list += (list.empty() ? "" : "; ") + c;
    throw InputError("--resume " + driver.out_dir + ": the data changed since the experiment ran: " + list +
                     "; resume with the data it ran on, or go on with this data with --allow-changed-data (the "
                     "journal records it)");
  }
  driver.data_changes = changes;
}

}  // namespace

int run_run_command(const std::vector<std::string>& args) {
  util::Subcommand command("run", "packtune run CONFIG [options] | packtune run --resume DIR [options]");
  command.positional("config", "CONFIG", "the experiment config (JSON)",
                     "usage: packtune run CONFIG [--out DIR] or packtune run --resume DIR");
  auto add = command.options();
  add("out,o", po::value<std::string>(), "results directory (default runs/NAME-TIME)")
     ("resume", po::value<std::string>(), "continue the experiment whose results are in DIR (its driver was killed or "
                                          "stopped); CONFIG may be left out");
  {  // One option for each override of the config table, whose rules are config_table's words.
    using namespace config_table;
#define PACKTUNE_CONFIG_KEY(...)
#define PACKTUNE_CONFIG_BLOCK(...)
#define PACKTUNE_CONFIG_FLAG(member, flag, CliType, rule, help) add(flag, flag_value<CliType>(rule), help);
#include "experiment/config_keys.def"
#undef PACKTUNE_CONFIG_KEY
#undef PACKTUNE_CONFIG_BLOCK
#undef PACKTUNE_CONFIG_FLAG
  }
  add("quiet,q", "warnings and the final summary only: no status table or lines");
  add("verbose,v", "the planner's and profiler's workings on the console too (DIR/driver.log always has them)");
  add("allow-changed-data", "with --resume: go on although the data files changed since the experiment ran (the "
                            "journal records which); without it such a resume is refused");
  add("fresh-profiles", "measure every throughput profile again instead of taking the profile cache's (and keep the "
                        "new ones there; `packtune profile` shows the cache)");
  if (!command.parse(join_optional_value(args, "--mlflow", options_with_values(), "--resume"))) return 0;
  const auto& vm = command.values();
  const bool resume = vm.count("resume") > 0;
  if (!resume) command.argument();  // CONFIG may be left out only with --resume
  if (resume && vm["resume"].as<std::string>().empty()) throw InputError("run: --resume is empty; give a folder");
  if (resume && vm.count("out") && vm["out"].as<std::string>() != vm["resume"].as<std::string>()) {
    throw InputError("run: --resume DIR continues the experiment in DIR; leave --out out");
  }
  const bool allow_changed_data = vm.count("allow-changed-data") > 0;
  if (allow_changed_data && !resume) {
    throw InputError("run: --allow-changed-data goes with --resume DIR (a new run records the data it starts on)");
  }
  Overrides overrides;
#define PACKTUNE_CONFIG_KEY(...)
#define PACKTUNE_CONFIG_BLOCK(...)
#define PACKTUNE_CONFIG_FLAG(member, flag, CliType, rule, help) \
  if (vm.count(flag)) overrides.member = vm[flag].as<CliType>();
#include "experiment/config_keys.def"
#undef PACKTUNE_CONFIG_KEY
#undef PACKTUNE_CONFIG_BLOCK
#undef PACKTUNE_CONFIG_FLAG
  // The config as run records the plugin for --resume, and it holds one.
  check_override_counts(overrides);

  DriverOptions driver;
  driver.quiet = vm.count("quiet") > 0;
  driver.fresh_profiles = vm.count("fresh-profiles") > 0;
  driver.verbose = vm.count("verbose") > 0;
  if (driver.quiet && driver.verbose) throw InputError("run: --quiet and --verbose contradict each other; give one");
  ExperimentConfig config;
  if (resume) {
    driver.out_dir = vm["resume"].as<std::string>();
    driver.resume = true;
    config = resumed_config(driver.out_dir, vm, overrides);
    check_resumed_data(config, allow_changed_data, driver);
  } else {
    config = load_config(vm["config"].as<std::string>());
    apply_overrides(config, overrides);
    record_as_run(config);
    driver.out_dir = vm.count("out") ? vm["out"].as<std::string>() : default_out_dir(config.name);
    ResultsWriter::check_out(driver.out_dir);
  }
  if (!config.tuner_plugin.empty()) tuners::load_tuner_plugin(config.tuner_plugin);
  if (!config.model_plugin.empty()) declare_model_plugin(config.model_plugin);
  validate(config);
  check_torchscript_models(config);
  // After validate read the data in full: what the run starts on, for its journal's header.
  if (!resume) driver.data_files = datasets::fingerprint_data(config.data);
  // The driver checks --out is fresh once it holds the folder's lock: a check here could
  // pass for two drivers started together.
  LiveExport export_as_it_runs(config, driver.out_dir, resume);
  return export_as_it_runs.finish(run_experiment(config, driver));
}

}  // namespace packtune::cli
