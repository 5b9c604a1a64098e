#pragma once
// The experiment config (a JSON file) and the command-line overrides, checked strictly:
// an unknown key, a wrong type or an empty range is an InputError naming the field.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "datasets/data_source.hpp"
#include "experiment/config_keys.hpp"
#include "tuners/search_space.hpp"
#include "tuners/trial_config.hpp"
#include "tuners/tuner.hpp"

namespace packtune {

// The `packtune run` options that override a key, one for each PACKTUNE_CONFIG_FLAG row.
struct Overrides {
#define PACKTUNE_CONFIG_KEY(...)
#define PACKTUNE_CONFIG_BLOCK(...)
#define PACKTUNE_CONFIG_FLAG(member, flag, CliType, rule, help) std::optional<CliType> member;
#include "experiment/config_keys.def"
#undef PACKTUNE_CONFIG_KEY
#undef PACKTUNE_CONFIG_BLOCK
#undef PACKTUNE_CONFIG_FLAG
};

struct ExperimentConfig {
  // The keys of the table, each a member of its own name (docs/config.md says what they mean).
#define PACKTUNE_CONFIG_KEY(name, Type, default_value, ...) Type name = default_value;
#define PACKTUNE_CONFIG_BLOCK(...)
#define PACKTUNE_CONFIG_FLAG(...)
#include "experiment/config_keys.def"
#undef PACKTUNE_CONFIG_KEY
#undef PACKTUNE_CONFIG_BLOCK
#undef PACKTUNE_CONFIG_FLAG

  // budget
  std::string budget_unit = "epochs";
  double min_budget = 1;
  double max_budget = 1;
  double report_every = 0;

  // tuner
  std::string tuner = "random";
  // The trial limit as given; -1: not given, see trial_limit().
  std::int64_t trials = -1;
  nlohmann::json tuner_settings = nlohmann::json::object();
  std::string settings_tuner;  // the tuner the settings were written for, when --tuner replaced it

  // export (config_blocks.hpp): the stores as the config as run records them; "" for none.
  std::string export_mlflow;       // a tracking URI, or an absolute folder for a local store
  std::string export_tensorboard;  // an absolute folder

  datasets::DataOptions data;
  tuners::TrialConfig model;      // fixed hyper-parameters
  tuners::SearchSpace space;
  nlohmann::json source;          // the config as read, for the results directory
};

// Parses and validates. `path` is used in messages and for the default name.
ExperimentConfig parse_config(const nlohmann::json& json, const std::string& path);
// Reads only the keys in `only` as parse_config does and ignores the others, which a caller
// that needs a few keys (`packtune simulate`) leaves to `packtune run` to check.
ExperimentConfig parse_config_keys(const nlohmann::json& json, const std::string& path,
                                   const std::vector<std::string>& only);
// The text of a config file: not JSON is an InputError too.
ExperimentConfig parse_config_text(const std::string& text, const std::string& path);
ExperimentConfig load_config(const std::string& path);
// load_config's file, read as parse_config_keys reads it.
ExperimentConfig load_config_keys(const std::string& path, const std::vector<std::string>& only);
// Each override's own check ("--actors: expected 0 ... or more"), then its value, checked as
// its key's (an enum's word, a device) and written over the config's.
void apply_overrides(ExperimentConfig& config, const Overrides& overrides);
// The checks of how often a flag is given (--tuner-plugin: once), for a command line checked
// before its config is read; apply_overrides checks the rest.
void check_override_counts(const Overrides& overrides);

// Checks everything that can be checked before a process starts: the tuner's settings, every
// hyper-parameter the space can produce, the device syntax and the data files.
void validate(const ExperimentConfig& config);

tuners::TunerContext tuner_context(const ExperimentConfig& config);

// The trial limit the tuner gets: `trials` when given; otherwise 0 (the whole schedule: one
// Hyperband sweep, the formula's successive-halving bracket, the whole grid) for the tuners
// that have one, and 10 for the others.
std::int64_t trial_limit(const ExperimentConfig& config);

// The threads each local actor trains with: threads_per_actor, or the cores shared among the
// local actors.
int local_actor_threads(const ExperimentConfig& config);
// Writes the values the overrides may have changed into `config.source`, which becomes the
// config as run (config.json, the journal's header), and the threads of local actors, which
// --resume keeps.
void record_as_run(ExperimentConfig& config);
// The keys (dotted paths, e.g. "tuner.eta") whose values differ between two configs as run,
// leaving out those a resumed experiment may change (Resume::MayChange in config_keys.def):
// where its actors are and how they join. threads_per_actor is not among them: it can change
// a trial's numbers.
std::vector<std::string> resume_differences(const nlohmann::json& ran, const nlohmann::json& now);

}  // namespace packtune
