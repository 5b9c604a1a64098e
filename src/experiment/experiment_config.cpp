#include "experiment/experiment_config.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <limits>
#include <set>
#include <thread>

#include "actors/device_syntax.hpp"
#include "actors/trial_spec.hpp"
#include "packtune/error.hpp"
#include "experiment/trial_shape.hpp"
#include "tuners/tuner_registry.hpp"

namespace packtune {

using nlohmann::json;

namespace {

json parse_json(const std::string& text, const std::string& path) {
  try {
    return json::parse(text);
  } catch (const json::exception& e) {
    // Not only parse_error: a number too large for a double ("1e400") is an out_of_range.
    throw InputError(path + ": not valid JSON (" + std::string(e.what()) + ")");
  }
}

json read_json_file(const std::string& path) {
  if (std::filesystem::is_directory(path)) throw InputError(path + ": a folder, not a config file");
  if (!std::filesystem::is_regular_file(path)) {
    throw InputError(path + ": config file not found");
  }
  std::ifstream in(path, std::ios::binary);
  const std::string text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  return parse_json(text, path);
}

}  // namespace

ExperimentConfig load_config(const std::string& path) { return parse_config(read_json_file(path), path); }

ExperimentConfig load_config_keys(const std::string& path, const std::vector<std::string>& only) {
  return parse_config_keys(read_json_file(path), path, only);
}

ExperimentConfig parse_config_text(const std::string& text, const std::string& path) {
  return parse_config(parse_json(text, path), path);
}

tuners::TunerContext tuner_context(const ExperimentConfig& c) {
  tuners::TunerContext t;
  t.space = c.space;
  t.metric = c.metric;
  t.mode = c.mode;
  t.min_budget = c.min_budget;
  t.max_budget = c.max_budget;
  t.max_trials = trial_limit(c);
  t.seed = c.seed;
  t.settings = c.tuner_settings;
  return t;
}

std::int64_t trial_limit(const ExperimentConfig& c) {
  if (c.trials >= 0) return c.trials;
  return c.tuner == "hyperband" || c.tuner == "sha" || c.tuner == "grid" ? 0 : 10;
}

void validate(const ExperimentConfig& c) {
  // Building the tuner checks its name and its own settings.
  try {
    tuners::TunerRegistry::instance().create(c.tuner, tuner_context(c));
  } catch (const InputError& e) {
    const std::string what = e.what();
    if (c.settings_tuner.empty() || what.rfind("tuner.", 0) != 0) throw;
    throw InputError(what + " (the config's tuner settings were written for " + c.settings_tuner + "; with --tuner " +
                     c.tuner + " remove or change them)");
  }

  // The fixed values alone, then each end of every range and each choice on top of them:
  // every config the space can produce is then a valid trial.
  auto fixed = c.model;
  const auto fixed_spec = actors::parse_trial_spec(fixed, "model");
  int largest_batch = fixed_spec.batch_size;
  // With the family fixed to mlp, a convolution's hyper-parameters would only be recorded in
  // each trial's config and never change a model: the user meant something else.
  const auto sampled = [&](const std::string& name) {
    const auto& params = c.space.params();
    return std::any_of(params.begin(), params.end(), [&](const tuners::ParamSpec& p) { return p.name == name; });
  };
  if (!sampled("family") && fixed_spec.model.family == "mlp") {
    for (const char* key : {"channels", "kernel", "batch_norm"}) {
      const bool in_space = sampled(key);
      if (in_space || fixed.count(key)) {
        throw InputError(std::string(in_space ? "space." : "model.") + key +
                         ": a cnn hyper-parameter, but model.family is mlp; remove it or set model.family to cnn");
      }
    }
  }
  for (const auto& p : c.space.params()) {
    std::vector<tuners::ParamValue> probes = p.values;
    if (p.kind == tuners::ParamSpec::Kind::RandInt) {
      probes = {static_cast<std::int64_t>(p.low), static_cast<std::int64_t>(p.high)};
    } else if (p.kind != tuners::ParamSpec::Kind::Choice) {
      probes = {p.low, p.high};
    }
    for (const auto& v : probes) {
      auto trial = fixed;
      trial[p.name] = v;
      largest_batch = std::max(largest_batch, actors::parse_trial_spec(trial, "space").batch_size);
    }
  }
  for (const auto& file : datasets::data_files(c.data)) {
    if (!std::filesystem::is_regular_file(file)) {
      throw InputError(file + ": data file not found; install dataset-fashion-mnist "
                              "(scripts/setup.sh), or set data.dir in the config or PACKTUNE_DATA_DIR");
    }
  }
  if (c.data.train_size == 0 && c.budget_unit != "epochs") return;
  // The training file's header, read once: the images the validation split leaves.
  auto all = c.data;
  all.train_size = 0;
  const auto available = datasets::train_images(all);
  if (c.data.train_size > available) {
    throw InputError("data.train_size: " + std::to_string(c.data.train_size) + " is more than the " +
                     std::to_string(available) + " training images the file holds beyond the validation split; " +
                     "use at most that, or 0 for all of them");
  }
  // An epoch is floor(images / batch_size) steps: with fewer images than a batch, every job would
  // train one step whatever its budget.
  if (c.budget_unit == "epochs") {
    const auto images = c.data.train_size > 0 ? c.data.train_size : available;
    if (images < static_cast<std::uint32_t>(largest_batch)) {
      throw InputError("data.train_size: " + std::to_string(images) + " training images make no whole batch of " +
                       std::to_string(largest_batch) + " (batch_size); use more training images or a smaller batch_size");
    }
  }
}

}  // namespace packtune

namespace packtune {

int local_actor_threads(const ExperimentConfig& config) {
  if (config.threads_per_actor > 0) return config.threads_per_actor;
  const int cores = std::max(1u, std::thread::hardware_concurrency());
  return std::max(1, cores / std::max(1, config.actors));
}

}  // namespace packtune
