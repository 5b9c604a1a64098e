// The config table (config_keys.def) expanded into the parser and the config as run: each
// row's key read by its type and limits, then its check; the blocks' hand-written readers are
// in config_blocks.cpp, the overrides and the resume check in config_overrides.cpp, the docs
// in config_doc.cpp.
#include "experiment/config_keys.hpp"

#include <algorithm>
#include <filesystem>
#include <type_traits>

#include "experiment/config_blocks.hpp"
#include "experiment/config_fields.hpp"
#include "experiment/experiment_config.hpp"
#include "packtune/error.hpp"
#include "spec/device_syntax.hpp"
#include "spec/precision.hpp"
#include "util/byte_size.hpp"

namespace packtune {
namespace {

using nlohmann::json;
using namespace config_table;
// The words of the table's `record` column.
constexpr Record Always = Record::Always;
constexpr Record IfNotEmpty = Record::IfNotEmpty;
constexpr Record No = Record::No;

// --- a key's value, by its type --------------------------------------------------------------

void read_value(Fields& f, const char* key, bool& out, const Limits&) { f.boolean(key, out); }
void read_value(Fields& f, const char* key, std::string& out, const Limits&) { f.string(key, out); }
void read_value(Fields& f, const char* key, double& out, const Limits& l) {
  f.number(key, out, l.min, l.open, l.max);
}

template <class T>
void read_value(Fields& f, const char* key, T& out, const Limits& l) {
  if constexpr (std::is_enum_v<T>) {
    if (!f.has(key)) return;
    std::string word;
    // true and false are fuse's spellings of the first releases: auto and never.
    if constexpr (std::is_same_v<T, packing::FuseMode>) {
      if (f.value(key).is_boolean()) {
        f.mark(key);
        word = f.value(key).get<bool>() ? "auto" : "never";
      }
    }
    if (word.empty()) f.string(key, word);
    out = parse_enum<T>(word, key);
  } else if (l.kind == Limits::Kind::ByteSize) {
    if (!f.has(key)) return;
    const auto& v = f.get(key, json::value_t::string, "a memory size such as \"600MiB\"");
    out = util::parse_byte_size(v.get<std::string>(), key);
  } else {
    f.integer(key, out, l.low, l.high);
  }
}

// --- the checks after a key (the `check` column) ----------------------------------------------

void no_check(ExperimentConfig&, const std::string&) {}

void check_name(ExperimentConfig& c, const std::string&) { check_experiment_name(c.name, "name"); }

void check_listen(ExperimentConfig& c, const std::string&) { check_listen_syntax(c.listen, "listen"); }

void check_task(ExperimentConfig& c, const std::string&) { c.data.task = c.task; }

// After task: the metrics a task's trials report differ.
void check_metric(ExperimentConfig& c, const std::string&) {
  const bool regression = c.task == datasets::Task::Regression;
  if (regression && !c.source.contains("metric")) c.metric = "val_mse";
  if (regression) {
    if (c.metric == "val_accuracy") {
      throw InputError("metric: val_accuracy needs task classification; a regression task ranks trials by val_mse, "
                       "val_mae, val_loss or train_loss");
    }
    if (c.metric != "val_mse" && c.metric != "val_mae" && c.metric != "val_loss" && c.metric != "train_loss") {
      throw InputError("metric: unknown metric \"" + c.metric +
                       "\"; expected val_mse, val_mae, val_loss or train_loss (task regression)");
    }
  } else if (c.metric != "val_accuracy" && c.metric != "val_loss" && c.metric != "train_loss") {
    if (c.metric == "val_mse" || c.metric == "val_mae") {
      throw InputError("metric: " + c.metric + " needs \"task\": \"regression\"; a classification task ranks trials "
                       "by val_accuracy, val_loss or train_loss");
    }
    throw InputError("metric: unknown metric \"" + c.metric + "\"; expected val_accuracy, val_loss or train_loss");
  }
  c.mode = c.metric == "val_accuracy" ? tuners::Mode::Max : tuners::Mode::Min;  // mode's default
}

// A plugin's path relative to the config file `path`'s folder, absolute.
void resolve_beside_config(std::string& plugin, const std::string& path) {
  if (!plugin.empty() && std::filesystem::path(plugin).is_relative()) {
    plugin = (std::filesystem::absolute(path).parent_path() / plugin).lexically_normal().string();
  }
}

void resolve_tuner_plugin(ExperimentConfig& c, const std::string& path) { resolve_beside_config(c.tuner_plugin, path); }

void resolve_model_plugin(ExperimentConfig& c, const std::string& path) { resolve_beside_config(c.model_plugin, path); }

void check_device(ExperimentConfig& c, const std::string&) { spec::check_device_syntax(c.device); }

void check_precision(ExperimentConfig& c, const std::string&) { spec::parse_precision(c.precision, "precision"); }

void check_actor_timeout(ExperimentConfig& c, const std::string&) {
  // Heartbeats are late by a scheduling hiccup now and then: one missed must not retire an actor.
  if (c.actor_timeout_seconds < 2 * c.heartbeat_seconds) {
    throw InputError("actor_timeout_seconds: " + json(c.actor_timeout_seconds).dump() +
                     " would retire healthy actors, which send a heartbeat every heartbeat_seconds (" +
                     json(c.heartbeat_seconds).dump() + "); set it to at least twice that");
  }
}

// --- the table ---------------------------------------------------------------------------------

struct Row {
  const char* name;
  void (*read)(Fields&, ExperimentConfig&, const std::string& path);
  Record record;
  void (*write)(const ExperimentConfig&, json& source);  // the value into the config as run
};

template <class T>
bool is_empty(const T& value) {
  if constexpr (std::is_same_v<T, std::string>) {
    return value.empty();
  } else {
    return false;
  }
}

const std::vector<Row>& rows() {
  static const std::vector<Row> all = {
#define PACKTUNE_CONFIG_KEY(key, Type, default_value, limits, check, resume, record, default_doc, doc) \
  {#key,                                                                                              \
   [](Fields& f, ExperimentConfig& c, const std::string& path) {                                      \
     read_value(f, #key, c.key, limits);                                                              \
     check(c, path);                                                                                  \
   },                                                                                                 \
   record,                                                                                            \
   [](const ExperimentConfig& c, json& source) {                                                      \
     if (record == Always || (record == IfNotEmpty && !is_empty(c.key))) source[#key] = json_of(c.key); \
   }},
#define PACKTUNE_CONFIG_BLOCK(key, default_doc, resume, doc) {#key, read_##key, No, nullptr},
#define PACKTUNE_CONFIG_FLAG(...)
#include "experiment/config_keys.def"
#undef PACKTUNE_CONFIG_KEY
#undef PACKTUNE_CONFIG_BLOCK
#undef PACKTUNE_CONFIG_FLAG
  };
  return all;
}

ExperimentConfig read_config(const json& root, const std::string& path, const std::vector<std::string>* only) {
  ExperimentConfig c;
  c.source = root;
  c.name = experiment_name_from(std::filesystem::path(path).stem().string());
  Fields top(root, "");
  std::string allowed;
  for (const auto& row : rows()) allowed += (allowed.empty() ? "" : ", ") + std::string(row.name);
  top.allow(allowed);
  for (const auto& row : rows()) {
    if (only == nullptr || std::find(only->begin(), only->end(), row.name) != only->end()) {
      row.read(top, c, path);
    }
  }
  if (only == nullptr) top.finish();
  return c;
}

}  // namespace

namespace {
// ASCII only: a name is a folder's on every file system the results may be copied to.
bool plain_name_char(char ch) {
  return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '-' || ch == '_' ||
         ch == '.';
}
}  // namespace

void check_experiment_name(const std::string& name, const std::string& where) {
  // The name becomes a folder under runs/: a slash or .. would put it elsewhere.
  if (name.empty() || name == "." || name == ".." || name.size() > config_table::kMaxNameLength ||
      !std::all_of(name.begin(), name.end(), plain_name_char)) {
    throw InputError(where + ": " + json(name).dump(-1, ' ', false, json::error_handler_t::replace) +
                     " is not a plain name; expected 1 to " + std::to_string(config_table::kMaxNameLength) +
                     " letters, digits, -, _ or ., not . or ..");
  }
}

std::string experiment_name_from(const std::string& stem) {
  std::string name = stem.substr(0, config_table::kMaxNameLength);
  for (char& ch : name) {
    if (!plain_name_char(ch)) ch = '_';
  }
  if (name.empty() || name == "." || name == "..") return "experiment";
  return name;
}

void check_listen_syntax(const std::string& listen, const std::string& where) {
  if (listen.rfind("inproc://", 0) == 0) {
    throw InputError(where + ": " + listen + " is inside the driver's process, where no actor can reach it; use ipc, "
                     "tcp or an ipc:// or tcp:// endpoint");
  }
}

ExperimentConfig parse_config(const json& root, const std::string& path) { return read_config(root, path, nullptr); }

ExperimentConfig parse_config_keys(const json& root, const std::string& path, const std::vector<std::string>& only) {
  return read_config(root, path, &only);
}

void record_as_run(ExperimentConfig& config) {
  auto& source = config.source;
  // Decided once, kept by --resume: the number of threads can change a trial's numbers.
  if (config.actors > 0) {
    config.threads_per_actor = local_actor_threads(config);
    source["threads_per_actor"] = config.threads_per_actor;
  }
  for (const auto& row : rows()) {
    if (row.write != nullptr) row.write(config, source);
  }
  source["data"] = data_as_run(config.data);
  if (auto stores = export_as_run(config); stores.is_null()) {
    source.erase("export");
  } else {
    source["export"] = std::move(stores);
  }
  if (source.contains("tuner") && source["tuner"].is_object()) {
    source["tuner"]["name"] = config.tuner;
    source["tuner"]["trials"] = trial_limit(config);
  } else {
    source["tuner"] = {{"name", config.tuner}, {"trials", trial_limit(config)}};
  }
}

}  // namespace packtune
