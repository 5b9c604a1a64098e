#pragma once
// The experiment config (a JSON file) and the command-line overrides, checked strictly:
// an unknown key, a wrong type or an empty range is an InputError naming the field.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "datasets/image_dataset.hpp"
#include "tuners/search_space.hpp"
#include "tuners/trial_config.hpp"
#include "tuners/tuner.hpp"

namespace packtune {

struct Overrides {
  std::optional<std::int64_t> trials;
  std::optional<int> actors;
  std::optional<std::int64_t> seed;  // signed: boost reads "-1" as a huge unsigned
  std::optional<std::string> device;
  std::optional<std::string> tuner;
  std::optional<int> max_pack;
  std::optional<std::string> keep_checkpoints;
  std::optional<std::string> fuse;
  std::optional<std::string> mixed_packs;
  std::optional<std::string> listen;
  std::optional<std::string> keys;
  std::optional<std::string> tuner_plugin;  // relative to the current folder
};

struct ExperimentConfig {
  std::string name;
  std::uint64_t seed = 0;
  std::string metric = "val_accuracy";
  tuners::Mode mode = tuners::Mode::Max;

  std::string budget_unit = "epochs";
  double min_budget = 1;
  double max_budget = 1;
  double report_every = 0;

  std::string tuner = "random";
  // The trial limit as given; -1: not given, see trial_limit().
  std::int64_t trials = -1;
  nlohmann::json tuner_settings = nlohmann::json::object();
  std::string settings_tuner;  // the tuner the settings were written for, when --tuner replaced it
  // A shared library with more tuners, or empty; a relative path in a config file is relative to
  // that file's folder. The config as run records it absolute, so --resume finds it from anywhere.
  std::string tuner_plugin;
  // At the end, the best trial's final model is evaluated on the test split (best.json "test").
  bool evaluate_test = true;

  int actors = 1;                 // 0: none; nodes and actors started elsewhere join
  std::string device = "cpu";
  int max_pack = 8;               // trials trained at once per actor
  // At a rung boundary the trials the tuner promotes are planned together (Planner::replan,
  // docs/planner.md); false: each is placed online as the tuner hands it out.
  bool replan = true;
  // auto: fuse trials (HFTA, unlike widths and optimizers too) where the throughput the
  // actors measured says it pays; always: as far as memory and max_pack allow; never.
  std::string fuse = "auto";
  // Whether an actor trains trials that do not fuse side by side (packing::MixedPacks):
  // auto: on GPUs, not on CPUs, where they only take turns on the same cores; always; never.
  std::string mixed_packs = "auto";
  int threads_per_actor = 0;      // 0: the cores divided among the local actors
  std::string listen = "ipc";     // ipc | tcp | an explicit ZeroMQ endpoint
  // CURVE keys (`packtune keys DIR`) for a listen endpoint other machines can reach; without
  // them such a driver refuses to start unless `insecure` says so.
  std::string keys;
  bool insecure = false;
  double heartbeat_seconds = 1;
  double actor_timeout_seconds = 60;
  // With no local actors: how long the driver waits for the first actor to join.
  double join_timeout_seconds = 120;
  // Trial checkpoints in DIR/checkpoints: "needed" deletes those no promotion or restart can
  // use and keeps the best trials' last ones; "all" keeps every one (docs/checkpoints.md).
  std::string keep_checkpoints = "needed";
  // Seconds between the checkpoints an actor writes inside a long job, so that a dead actor
  // or host loses at most that much training; 0: only at the end of a job.
  double checkpoint_every = 300;
  // Memory each actor may fill with trials (0: its device's share). On the CPU the actor
  // enforces it: a pack that needs more runs out of memory and is split by the planner.
  std::int64_t actor_memory = 0;
  double memory_estimate_scale = 1.0;  // multiplies the memory model's figures

  datasets::DataOptions data;
  tuners::TrialConfig model;      // fixed hyper-parameters
  tuners::SearchSpace space;
  nlohmann::json source;          // the config as read, for the results directory
};

// Parses and validates. `path` is used in messages and for the default name.
ExperimentConfig parse_config(const nlohmann::json& json, const std::string& path);
// The text of a config file: not JSON is an InputError too.
ExperimentConfig parse_config_text(const std::string& text, const std::string& path);
ExperimentConfig load_config(const std::string& path);
void apply_overrides(ExperimentConfig& config, const Overrides& overrides);
// auto | always | never, else an InputError naming `where`.
void check_fuse_mode(const std::string& mode, const std::string& where);

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
// leaving out those a resumed experiment may change: where its actors are and how they join
// ("actors", "listen", "keys", "insecure", "join_timeout_seconds"). threads_per_actor is not
// among them: it can change a trial's numbers.
std::vector<std::string> resume_differences(const nlohmann::json& ran, const nlohmann::json& now);

}  // namespace packtune
