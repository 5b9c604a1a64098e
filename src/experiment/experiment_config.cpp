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
#include "util/byte_size.hpp"

namespace packtune {
namespace {

using nlohmann::json;

class Fields {
 public:
  Fields(const json& object, std::string where) : object_(object), where_(std::move(where)) {
    if (!object_.is_object()) {
      throw InputError((where_.empty() ? std::string("the config") : where_) + ": expected an object, got " +
                       std::string(object_.type_name()));
    }
  }

  bool has(const char* key) const { return object_.contains(key); }
  std::string at(const char* key) const { return where_.empty() ? key : where_ + "." + key; }

  const json& get(const char* key, json::value_t kind, const char* expected) {
    seen_.insert(key);
    const auto& v = object_.at(key);
    const bool ok = kind == json::value_t::number_float ? v.is_number() : v.type() == kind ||
                    (kind == json::value_t::number_unsigned && v.is_number_integer());
    if (!ok) throw InputError(at(key) + ": expected " + expected + ", got " + type_of(v));
    return v;
  }

  void boolean(const char* key, bool& out) {
    if (has(key)) out = get(key, json::value_t::boolean, "true or false").get<bool>();
  }
  void string(const char* key, std::string& out) {
    if (has(key)) out = get(key, json::value_t::string, "a string").get<std::string>();
  }
  template <class Int>
  void integer(const char* key, Int& out, std::int64_t low, std::int64_t high) {
    if (!has(key)) return;
    const auto& v = get(key, json::value_t::number_unsigned, "an integer");
    const auto i = v.get<std::int64_t>();
    if (i < low || i > high) {
      throw InputError(at(key) + ": " + v.dump() + " is out of range; expected " +
                       std::to_string(low) + " to " + std::to_string(high));
    }
    out = static_cast<Int>(i);
  }
  void number(const char* key, double& out, double low, bool low_open) {
    if (!has(key)) return;
    const auto& v = get(key, json::value_t::number_float, "a number");
    const double d = v.get<double>();
    if (!std::isfinite(d) || d < low || (low_open && d == low)) {
      throw InputError(at(key) + ": " + v.dump() + " is out of range; expected a number " +
                       (low_open ? "> " : ">= ") + json(low).dump());
    }
    out = d;
  }
  const json& object(const char* key) {
    seen_.insert(key);
    const auto& v = object_.at(key);
    if (!v.is_object()) throw InputError(at(key) + ": expected an object, got " + type_of(v));
    return v;
  }
  void mark(const char* key) { seen_.insert(key); }

  // Every key not read is unknown: a typo must not silently fall back to a default.
  void finish() const {
    for (const auto& [key, _] : object_.items()) {
      if (!seen_.count(key)) {
        throw InputError((where_.empty() ? key : where_ + "." + key) + ": unknown key; expected one of " +
                         allowed_);
      }
    }
  }
  void allow(std::string list) { allowed_ = std::move(list); }

 private:
  static std::string type_of(const json& v) {
    if (v.is_number_integer()) return "an integer (" + v.dump() + ")";
    if (v.is_number()) return "a number (" + v.dump() + ")";
    return std::string(v.type_name());
  }
  const json& object_;
  std::string where_;
  std::set<std::string> seen_;
  std::string allowed_;
};

void check_keep_checkpoints(const std::string& value, const std::string& where) {
  if (value != "all" && value != "needed") {
    throw InputError(where + ": unknown value \"" + value + "\"; expected all or needed");
  }
}

}  // namespace

void check_fuse_mode(const std::string& mode, const std::string& where) {
  if (mode != "auto" && mode != "always" && mode != "never") {
    throw InputError(where + ": unknown value \"" + mode + "\"; expected auto, always or never");
  }
}

ExperimentConfig parse_config(const json& root, const std::string& path) {
  ExperimentConfig c;
  c.source = root;
  c.name = std::filesystem::path(path).stem().string();
  Fields top(root, "");
  top.allow("name, seed, metric, mode, budget, tuner, tuner_plugin, actors, device, max_pack, fuse, mixed_packs, replan, "
            "evaluate_test, threads_per_actor, listen, keys, insecure, heartbeat_seconds, actor_timeout_seconds, join_timeout_seconds, keep_checkpoints, checkpoint_every, actor_memory, "
            "memory_estimate_scale, data, model, space");
  top.string("name", c.name);
  top.integer("seed", c.seed, 0, std::numeric_limits<std::int64_t>::max());
  top.string("metric", c.metric);
  if (c.metric != "val_accuracy" && c.metric != "val_loss" && c.metric != "train_loss") {
    throw InputError("metric: unknown metric \"" + c.metric +
                     "\"; expected val_accuracy, val_loss or train_loss");
  }
  c.mode = c.metric == "val_accuracy" ? tuners::Mode::Max : tuners::Mode::Min;
  if (top.has("mode")) {
    std::string mode;
    top.string("mode", mode);
    try {
      c.mode = tuners::parse_mode(mode);
    } catch (const InputError&) {
      throw InputError("mode: unknown value \"" + mode + "\"; expected min or max");
    }
  }

  if (top.has("budget")) {
    Fields b(top.object("budget"), "budget");
    b.allow("unit, min, max, report_every");
    b.string("unit", c.budget_unit);
    if (c.budget_unit != "epochs" && c.budget_unit != "steps") {
      throw InputError("budget.unit: unknown unit \"" + c.budget_unit + "\"; expected epochs or steps");
    }
    b.number("max", c.max_budget, 0, true);
    c.min_budget = c.max_budget;
    b.number("min", c.min_budget, 0, true);
    if (c.min_budget > c.max_budget) {
      throw InputError("budget.min: " + json(c.min_budget).dump() + " is above budget.max " +
                       json(c.max_budget).dump() + "; expected min <= max");
    }
    b.number("report_every", c.report_every, 0, false);
    b.finish();
  }

  if (top.has("tuner")) {
    const auto& t = root.at("tuner");
    top.mark("tuner");
    if (t.is_string()) {
      c.tuner = t.get<std::string>();
    } else {
      Fields f(top.object("tuner"), "tuner");
      f.string("name", c.tuner);
      f.integer("trials", c.trials, 0, 100000000);
      for (const auto& [key, value] : t.items()) {
        if (key != "name" && key != "trials") c.tuner_settings[key] = value;
      }
    }
  }
  top.string("tuner_plugin", c.tuner_plugin);
  if (!c.tuner_plugin.empty() && std::filesystem::path(c.tuner_plugin).is_relative()) {
    c.tuner_plugin = (std::filesystem::absolute(path).parent_path() / c.tuner_plugin).lexically_normal().string();
  }

  top.integer("actors", c.actors, 0, 4096);
  top.string("device", c.device);
  actors::check_device_syntax(c.device);
  top.integer("max_pack", c.max_pack, 1, 1024);
  if (top.has("fuse")) {
    const auto& v = root.at("fuse");
    top.mark("fuse");
    // true and false are the spellings of the first releases: auto and never.
    if (v.is_boolean()) {
      c.fuse = v.get<bool>() ? "auto" : "never";
    } else {
      top.string("fuse", c.fuse);
    }
    check_fuse_mode(c.fuse, "fuse");
  }
  top.string("mixed_packs", c.mixed_packs);
  check_fuse_mode(c.mixed_packs, "mixed_packs");
  top.integer("threads_per_actor", c.threads_per_actor, 0, 1024);
  top.string("listen", c.listen);
  top.string("keys", c.keys);
  top.boolean("insecure", c.insecure);
  top.boolean("evaluate_test", c.evaluate_test);
  top.boolean("replan", c.replan);
  top.number("heartbeat_seconds", c.heartbeat_seconds, 0, true);
  top.number("actor_timeout_seconds", c.actor_timeout_seconds, 0, true);
  top.number("join_timeout_seconds", c.join_timeout_seconds, 0, true);
  // Heartbeats are late by a scheduling hiccup now and then: one missed must not retire an actor.
  if (c.actor_timeout_seconds < 2 * c.heartbeat_seconds) {
    throw InputError("actor_timeout_seconds: " + json(c.actor_timeout_seconds).dump() +
                     " would retire healthy actors, which send a heartbeat every heartbeat_seconds (" +
                     json(c.heartbeat_seconds).dump() + "); set it to at least twice that");
  }
  top.string("keep_checkpoints", c.keep_checkpoints);
  top.number("checkpoint_every", c.checkpoint_every, 0, false);
  if (top.has("actor_memory")) {
    const auto& v = top.get("actor_memory", json::value_t::string, "a memory size such as \"600MiB\"");
    c.actor_memory = util::parse_byte_size(v.get<std::string>(), "actor_memory");
  }
  top.number("memory_estimate_scale", c.memory_estimate_scale, 0, true);
  check_keep_checkpoints(c.keep_checkpoints, "keep_checkpoints");

  // Without data.dir the files are in $PACKTUNE_DATA_DIR, else where Debian's
  // dataset-fashion-mnist puts them (DataOptions' default).
  if (const char* dir = std::getenv("PACKTUNE_DATA_DIR"); dir != nullptr && *dir != '\0') c.data.dir = dir;
  if (top.has("data")) {
    Fields d(top.object("data"), "data");
    d.allow("name, dir, train_size, validation_size");
    d.string("name", c.data.name);
    d.string("dir", c.data.dir);
    d.integer("train_size", c.data.train_size, 1, std::numeric_limits<std::uint32_t>::max());
    d.integer("validation_size", c.data.validation_size, 1, std::numeric_limits<std::uint32_t>::max());
    d.finish();
  }

  if (top.has("model")) {
    const auto& m = top.object("model");
    for (const auto& [key, value] : m.items()) {
      c.model[key] = tuners::param_from_json(value, "model." + key);
    }
  }
  if (top.has("space")) c.space = tuners::SearchSpace::from_json(top.object("space"), "space");
  top.finish();
  return c;
}

ExperimentConfig load_config(const std::string& path) {
  if (std::filesystem::is_directory(path)) throw InputError(path + ": a folder, not a config file");
  if (!std::filesystem::is_regular_file(path)) {
    throw InputError(path + ": config file not found");
  }
  std::ifstream in(path, std::ios::binary);
  const std::string text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  return parse_config_text(text, path);
}

ExperimentConfig parse_config_text(const std::string& text, const std::string& path) {
  json root;
  try {
    root = json::parse(text);
  } catch (const json::exception& e) {
    // Not only parse_error: a number too large for a double ("1e400") is an out_of_range.
    throw InputError(path + ": not valid JSON (" + std::string(e.what()) + ")");
  }
  return parse_config(root, path);
}

void apply_overrides(ExperimentConfig& c, const Overrides& o) {
  if (o.trials) {
    if (*o.trials < 0) throw InputError("--trials: expected 0 (the tuner's whole schedule, where it has one) or more");
    c.trials = *o.trials;
  }
  if (o.actors) {
    if (*o.actors < 0) throw InputError("--actors: expected 0 (actors join from elsewhere) or more");
    c.actors = *o.actors;
  }
  if (o.seed) {
    if (*o.seed < 0) {
      throw InputError("--seed: expected an integer from 0 to " +
                       std::to_string(std::numeric_limits<std::int64_t>::max()));
    }
    c.seed = static_cast<std::uint64_t>(*o.seed);
  }
  if (o.listen) {
    if (o.listen->empty()) throw InputError("--listen: expected ipc, tcp or a ZeroMQ endpoint");
    c.listen = *o.listen;
  }
  if (o.keys) c.keys = *o.keys;
  if (o.device) {
    actors::check_device_syntax(*o.device);
    c.device = *o.device;
  }
  if (o.tuner) {
    if (*o.tuner != c.tuner && !c.tuner_settings.empty()) c.settings_tuner = c.tuner;
    c.tuner = *o.tuner;
  }
  if (o.fuse) {
    check_fuse_mode(*o.fuse, "--fuse");
    c.fuse = *o.fuse;
  }
  if (o.mixed_packs) {
    check_fuse_mode(*o.mixed_packs, "--mixed-packs");
    c.mixed_packs = *o.mixed_packs;
  }
  if (o.max_pack) {
    if (*o.max_pack < 1) throw InputError("--max-pack: expected at least 1");
    c.max_pack = *o.max_pack;
  }
  if (o.tuner_plugin) c.tuner_plugin = std::filesystem::absolute(*o.tuner_plugin).lexically_normal().string();
  if (o.keep_checkpoints) {
    check_keep_checkpoints(*o.keep_checkpoints, "--keep-checkpoints");
    c.keep_checkpoints = *o.keep_checkpoints;
  }
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

void record_as_run(ExperimentConfig& config) {
  auto& source = config.source;
  // Decided once, kept by --resume: the number of threads can change a trial's numbers.
  if (config.actors > 0) {
    config.threads_per_actor = local_actor_threads(config);
    source["threads_per_actor"] = config.threads_per_actor;
  }
  source["name"] = config.name;
  source["seed"] = config.seed;
  source["actors"] = config.actors;
  source["listen"] = config.listen;
  if (!config.keys.empty()) source["keys"] = config.keys;
  source["device"] = config.device;
  source["max_pack"] = config.max_pack;
  source["fuse"] = config.fuse;
  source["mixed_packs"] = config.mixed_packs;
  source["keep_checkpoints"] = config.keep_checkpoints;
  if (!config.tuner_plugin.empty()) source["tuner_plugin"] = config.tuner_plugin;
  if (source.contains("tuner") && source["tuner"].is_object()) {
    source["tuner"]["name"] = config.tuner;
    source["tuner"]["trials"] = trial_limit(config);
  } else {
    source["tuner"] = {{"name", config.tuner}, {"trials", trial_limit(config)}};
  }
}

namespace {

void collect_differences(const json& a, const json& b, const std::string& where, std::vector<std::string>& out) {
  if (a.is_object() && b.is_object()) {
    std::set<std::string> keys;
    for (const auto& [k, v] : a.items()) keys.insert(k);
    for (const auto& [k, v] : b.items()) keys.insert(k);
    for (const auto& k : keys) {
      const std::string path = where.empty() ? k : where + "." + k;
      if (!a.contains(k) || !b.contains(k)) {
        out.push_back(path);
      } else {
        collect_differences(a[k], b[k], path, out);
      }
    }
  } else if (a != b) {
    out.push_back(where);
  }
}

}  // namespace

std::vector<std::string> resume_differences(const json& ran, const json& now) {
  static const std::set<std::string> may_change = {"actors", "listen", "keys", "insecure", "join_timeout_seconds"};
  std::vector<std::string> all, out;
  collect_differences(ran, now, "", all);
  for (const auto& key : all) {
    if (!may_change.count(key)) out.push_back(key);
  }
  return out;
}

}  // namespace packtune
