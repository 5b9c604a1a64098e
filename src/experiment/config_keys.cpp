// The config table (config_keys.def) expanded into the parser, the overrides, the config as
// run, the resume check and the docs.
#include "experiment/config_keys.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <set>
#include <type_traits>

#include "actors/device_syntax.hpp"
#include "actors/precision.hpp"
#include "experiment/experiment_config.hpp"
#include "experiment/trial_shape.hpp"
#include "packtune/error.hpp"
#include "util/byte_size.hpp"

namespace packtune {
namespace {

using nlohmann::json;
using namespace config_table;
// The words of the table's `resume` and `record` columns.
constexpr Resume Fixed = Resume::Fixed;
constexpr Resume MayChange = Resume::MayChange;
constexpr Record Always = Record::Always;
constexpr Record IfNotEmpty = Record::IfNotEmpty;
constexpr Record No = Record::No;

std::string number_text(double d);

// The keys of one JSON object, read once each; finish() refuses the ones no one read.
class Fields {
 public:
  Fields(const json& object, std::string where) : object_(object), where_(std::move(where)) {
    if (!object_.is_object()) {
      throw InputError((where_.empty() ? std::string("the config") : where_) + ": expected an object, got " +
                       std::string(object_.type_name()));
    }
  }

  bool has(const char* key) const { return object_.contains(key); }
  const json& value(const char* key) const { return object_.at(key); }
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
  void number(const char* key, double& out, double low, bool low_open,
              double high = std::numeric_limits<double>::infinity()) {
    if (!has(key)) return;
    const auto& v = get(key, json::value_t::number_float, "a number");
    const double d = v.get<double>();
    if (!std::isfinite(d) || d < low || (low_open && d == low) || d > high) {
      throw InputError(at(key) + ": " + v.dump() + " is out of range; expected a number " +
                       (low_open ? "> " : ">= ") + number_text(low) +
                       (std::isfinite(high) ? " and at most " + number_text(high) : std::string()));
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

// 100000000 rather than 1e+08 or 100000000.0: limits as a user writes them.
std::string number_text(double d) {
  if (d == std::floor(d) && std::fabs(d) < 1e16) return std::to_string(static_cast<std::int64_t>(d));
  return json(d).dump();
}

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

void check_device(ExperimentConfig& c, const std::string&) { actors::check_device_syntax(c.device); }

void check_precision(ExperimentConfig& c, const std::string&) { actors::parse_precision(c.precision, "precision"); }

void check_actor_timeout(ExperimentConfig& c, const std::string&) {
  // Heartbeats are late by a scheduling hiccup now and then: one missed must not retire an actor.
  if (c.actor_timeout_seconds < 2 * c.heartbeat_seconds) {
    throw InputError("actor_timeout_seconds: " + json(c.actor_timeout_seconds).dump() +
                     " would retire healthy actors, which send a heartbeat every heartbeat_seconds (" +
                     json(c.heartbeat_seconds).dump() + "); set it to at least twice that");
  }
}

// --- the blocks their owners parse (read_<name>) ------------------------------------------------

void read_budget(Fields& top, ExperimentConfig& c, const std::string&) {
  if (!top.has("budget")) return;
  Fields b(top.object("budget"), "budget");
  b.allow("unit, min, max, report_every");
  b.string("unit", c.budget_unit);
  if (c.budget_unit != "epochs" && c.budget_unit != "steps") {
    throw InputError("budget.unit: unknown unit \"" + c.budget_unit + "\"; expected epochs or steps");
  }
  // A budget in epochs is at least a step an epoch: validate() checks it against the data.
  b.number("max", c.max_budget, 0, true, kMaxSteps);
  c.min_budget = c.max_budget;
  b.number("min", c.min_budget, 0, true);
  if (c.min_budget > c.max_budget) {
    throw InputError("budget.min: " + json(c.min_budget).dump() + " is above budget.max " +
                     json(c.max_budget).dump() + "; expected min <= max");
  }
  b.number("report_every", c.report_every, 0, false);
  if (c.report_every > 0 && c.budget_unit == "steps" && c.report_every < 1) {
    throw InputError("budget.report_every: " + json(c.report_every).dump() +
                     " steps cannot be honoured, a report comes after a whole step; use 0 or at least 1");
  }
  if (c.report_every > 0 && c.max_budget / c.report_every > kMaxReports) {
    throw InputError("budget.report_every: " + json(c.report_every).dump() + " asks more than " +
                     number_text(kMaxReports) + " reports of a trial up to budget.max " + json(c.max_budget).dump() +
                     ", the most a trial may make; use 0 or at least " + json(c.max_budget / kMaxReports).dump());
  }
  b.finish();
}

void read_tuner(Fields& top, ExperimentConfig& c, const std::string&) {
  if (!top.has("tuner")) return;
  const auto& t = top.value("tuner");
  if (t.is_string()) {
    top.mark("tuner");
    c.tuner = t.get<std::string>();
    return;
  }
  Fields f(top.object("tuner"), "tuner");
  f.string("name", c.tuner);
  f.integer("trials", c.trials, 0, 100000000);
  for (const auto& [key, value] : t.items()) {
    if (key != "name" && key != "trials") c.tuner_settings[key] = value;
  }
}

// A data file's path relative to the config file `config_path`'s folder, absolute.
std::string beside_config(const std::string& file, const std::string& config_path) {
  if (file.empty() || std::filesystem::path(file).is_absolute()) return file;
  return (std::filesystem::absolute(config_path).parent_path() / file).lexically_normal().string();
}

// The keys of the data block each format reads; the others are refused for it, so that a key
// meant for another format does not go unnoticed.
const char* data_keys(datasets::DataFormat format) {
  switch (format) {
    case datasets::DataFormat::Idx:
      return "format, name, dir, train_size, validation_size, normalize, augment, order";
    case datasets::DataFormat::Hdf5:
      return "format, path, x, y, test_path, train_size, validation_size, normalize, augment, order";
    case datasets::DataFormat::Npy:
      return "format, x, y, test_x, test_y, train_size, validation_size, normalize, augment, order";
  }
  return "";
}

void read_data(Fields& top, ExperimentConfig& c, const std::string& path) {
  using datasets::DataFormat;
  auto& data = c.data;
  // Without data.dir the files are in $PACKTUNE_DATA_DIR, else where Debian's
  // dataset-fashion-mnist puts them (DataOptions' default).
  if (const char* dir = std::getenv("PACKTUNE_DATA_DIR"); dir != nullptr && *dir != '\0') {
    data.dir = std::filesystem::absolute(dir).lexically_normal().string();
  }
  if (!top.has("data")) return;
  const auto& block = top.object("data");
  Fields d(block, "data");
  std::string format = "idx";
  d.string("format", format);
  data.format = datasets::parse_data_format(format, "data.format");
  d.allow(data_keys(data.format));
  const std::string keys = data_keys(data.format);
  for (const auto& [key, _] : block.items()) {
    const bool known = key == "name" || key == "dir" || key == "path" || key == "x" || key == "y" ||
                       key == "test_path" || key == "test_x" || key == "test_y";
    if (known && (", " + keys + ",").find(", " + key + ",") == std::string::npos) {
      throw InputError("data." + key + ": not read by format " + format + "; its keys are " + keys);
    }
  }
  d.string("name", data.name);
  d.string("dir", data.dir);
  d.string("path", data.path);
  d.string("x", data.x);
  d.string("y", data.y);
  d.string("test_path", data.test_path);
  d.string("test_x", data.test_x);
  d.string("test_y", data.test_y);
  if (data.format == DataFormat::Hdf5 && data.path.empty()) {
    throw InputError("data.path: format hdf5 needs the HDF5 file of the training data");
  }
  if (data.format == DataFormat::Npy) {
    for (const char* key : {"x", "y"}) {
      if (!d.has(key)) throw InputError(std::string("data.") + key + ": format npy needs the .npy file of " +
                                        (*key == 'x' ? "the inputs" : "the labels or targets"));
    }
    if (data.test_x.empty() != data.test_y.empty()) {
      throw InputError(std::string(data.test_x.empty() ? "data.test_x" : "data.test_y") +
                       ": the test split needs both test_x and test_y");
    }
  }
  for (auto* file : {&data.dir, &data.path, &data.test_path, &data.test_x, &data.test_y}) {
    *file = beside_config(*file, path);
  }
  if (data.format == DataFormat::Npy) {
    data.x = beside_config(data.x, path);
    data.y = beside_config(data.y, path);
  }
  d.integer("train_size", data.train_size, 0, std::numeric_limits<std::uint32_t>::max());
  d.integer("validation_size", data.validation_size, 0, std::numeric_limits<std::uint32_t>::max());
  d.boolean("normalize", data.normalize);
  std::string order = datasets::order_name(data.order_per_trial);
  d.string("order", order);
  data.order_per_trial = datasets::parse_data_order(order, "data.order");
  if (d.has("augment")) {
    Fields a(d.object("augment"), "data.augment");
    a.allow("crop_padding, flip, per_trial");
    a.integer("crop_padding", data.augment.crop_padding, 0, 64);
    a.boolean("flip", data.augment.flip);
    a.boolean("per_trial", data.augment.per_trial);
    a.finish();
  }
  d.finish();
}

// The data block as the experiment used it: the keys its format reads, paths absolute.
json data_as_run(const datasets::DataOptions& data) {
  json all = data;
  json out = json::object();
  const std::string keys = std::string(", ") + data_keys(data.format) + ",";
  for (const auto& [key, value] : all.items()) {
    const bool empty_test = (key == "test_path" || key == "test_x" || key == "test_y") && value == "";
    if (keys.find(", " + key + ",") != std::string::npos && !empty_test) out[key] = value;
  }
  return out;
}

void read_model(Fields& top, ExperimentConfig& c, const std::string&) {
  if (!top.has("model")) return;
  for (const auto& [key, value] : top.object("model").items()) {
    c.model[key] = tuners::param_from_json(value, "model." + key);
  }
}

void read_space(Fields& top, ExperimentConfig& c, const std::string&) {
  if (top.has("space")) c.space = tuners::SearchSpace::from_json(top.object("space"), "space");
}

// --- the table ---------------------------------------------------------------------------------

struct Row {
  const char* name;
  void (*read)(Fields&, ExperimentConfig&, const std::string& path);
  Record record;
  void (*write)(const ExperimentConfig&, json& source);  // the value into the config as run
};

// The value a key holds, as JSON.
template <class T>
json json_of(const T& value) {
  if constexpr (std::is_enum_v<T>) {
    return to_string<T>(value);
  } else {
    return value;
  }
}

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

// --- overrides -----------------------------------------------------------------------------------

template <class T>
void check_rule(const FlagRule& rule, const std::string& flag, const T& value) {
  if constexpr (std::is_integral_v<T>) {
    if (rule.kind == FlagRule::Kind::AtLeast && value < rule.low) throw InputError(flag + ": " + rule.message);
  } else if constexpr (std::is_same_v<T, std::string>) {
    if (rule.kind == FlagRule::Kind::NotEmpty && value.empty()) throw InputError(flag + ": " + rule.message);
  } else {
    if (rule.kind == FlagRule::Kind::OneValue && value.size() != 1) throw InputError(flag + ": " + rule.message);
  }
}

// An override's value into its member: an enum parsed as the flag's, a device checked.
template <class Member, class Value>
void assign(Member& member, const Value& value, const std::string& flag) {
  if constexpr (std::is_enum_v<Member>) {
    member = parse_enum<Member>(value, flag);
  } else {
    member = static_cast<Member>(value);
  }
}

void apply_one(ExperimentConfig& c, std::string ExperimentConfig::*member, const std::string& value,
               const std::string& flag) {
  if (member == &ExperimentConfig::device) actors::check_device_syntax(value);
  if (member == &ExperimentConfig::precision) actors::parse_precision(value, flag);
  if (member == &ExperimentConfig::listen) check_listen_syntax(value, flag);
  if (member == &ExperimentConfig::tuner && value != c.tuner && !c.tuner_settings.empty()) c.settings_tuner = c.tuner;
  c.*member = value;
}

template <class Member, class Value>
void apply_one(ExperimentConfig& c, Member ExperimentConfig::*member, const Value& value, const std::string& flag) {
  assign(c.*member, value, flag);
}

// --tuner-plugin and --model-plugin are relative to the current folder, not to the config's.
void apply_one(ExperimentConfig& c, std::string ExperimentConfig::*member, const std::vector<std::string>& value,
               const std::string&) {
  c.*member = std::filesystem::absolute(value.front()).lexically_normal().string();
}

std::string default_doc_of(const char* given, const json& value) {
  if (*given != '\0') return given;
  return value.is_string() ? "\"" + value.get<std::string>() + "\"" : value.dump();
}

template <class T>
const char* type_doc() {
  if constexpr (std::is_same_v<T, bool>) return "boolean";
  if constexpr (std::is_same_v<T, std::string>) return "string";
  if constexpr (std::is_same_v<T, double>) return "number";
  if constexpr (std::is_enum_v<T>) return "string (one of)";
  return "integer";
}

template <class T>
std::string limits_doc(const Limits& l) {
  if constexpr (std::is_enum_v<T>) {
    return enum_words<T>();
  } else {
    switch (l.kind) {
      case Limits::Kind::Integer:
        return std::to_string(l.low) + " to " + std::to_string(l.high);
      case Limits::Kind::Number:
        return (l.open ? "> " : ">= ") + number_text(l.min) +
               (std::isfinite(l.max) ? ", at most " + number_text(l.max) : std::string());
      case Limits::Kind::ByteSize:
        return "a size: 600MiB, 2GiB, ...";
      case Limits::Kind::Any:
        break;
    }
    return "";
  }
}

// The flag that overrides `key`, or "".
std::string flag_of(const std::string& key) {
  if (key == "tuner") return "--tuner, --trials";
#define PACKTUNE_CONFIG_KEY(...)
#define PACKTUNE_CONFIG_BLOCK(...)
#define PACKTUNE_CONFIG_FLAG(member, flag, CliType, rule, help) \
  if (key == #member) return "--" flag;
#include "experiment/config_keys.def"
#undef PACKTUNE_CONFIG_KEY
#undef PACKTUNE_CONFIG_BLOCK
#undef PACKTUNE_CONFIG_FLAG
  return "";
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

void check_override_counts(const Overrides& o) {
#define PACKTUNE_CONFIG_KEY(...)
#define PACKTUNE_CONFIG_BLOCK(...)
#define PACKTUNE_CONFIG_FLAG(member, flag, CliType, rule, help) \
  if (o.member && (rule).kind == FlagRule::Kind::OneValue) check_rule(rule, "--" flag, *o.member);
#include "experiment/config_keys.def"
#undef PACKTUNE_CONFIG_KEY
#undef PACKTUNE_CONFIG_BLOCK
#undef PACKTUNE_CONFIG_FLAG
}

void apply_overrides(ExperimentConfig& c, const Overrides& o) {
#define PACKTUNE_CONFIG_KEY(...)
#define PACKTUNE_CONFIG_BLOCK(...)
#define PACKTUNE_CONFIG_FLAG(member, flag, CliType, rule, help) \
  if (o.member) {                                               \
    check_rule(rule, "--" flag, *o.member);                     \
    apply_one(c, &ExperimentConfig::member, *o.member, "--" flag); \
  }
#include "experiment/config_keys.def"
#undef PACKTUNE_CONFIG_KEY
#undef PACKTUNE_CONFIG_BLOCK
#undef PACKTUNE_CONFIG_FLAG
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
  std::set<std::string> may_change;
  for (const auto& key : config_table::keys()) {
    if (key.resume == Resume::MayChange) may_change.insert(key.name);
  }
  std::vector<std::string> all, out;
  collect_differences(ran, now, "", all);
  for (const auto& key : all) {
    if (!may_change.count(key)) out.push_back(key);
  }
  return out;
}

namespace config_table {

const std::vector<KeyInfo>& keys() {
  static const std::vector<KeyInfo> all = [] {
    const ExperimentConfig defaults;
    return std::vector<KeyInfo>{
#define PACKTUNE_CONFIG_KEY(key, Type, default_value, limits, check, resume, record, default_doc, doc) \
  {#key, type_doc<Type>(), default_doc_of(default_doc, json_of(defaults.key)), limits_doc<Type>(limits), doc, \
   flag_of(#key), resume},
#define PACKTUNE_CONFIG_BLOCK(key, default_doc, resume, doc) \
  {#key, "object", default_doc, "", doc, flag_of(#key), resume},
#define PACKTUNE_CONFIG_FLAG(...)
#include "experiment/config_keys.def"
#undef PACKTUNE_CONFIG_KEY
#undef PACKTUNE_CONFIG_BLOCK
#undef PACKTUNE_CONFIG_FLAG
    };
  }();
  return all;
}

std::string markdown() {
  std::string out =
      "# The experiment config\n"
      "\n"
      "<!-- Generated by `packtune config --markdown` from src/experiment/config_keys.def; the test\n"
      "     cli/config_doc checks it. Edit the table, then run the command to write this file. -->\n"
      "\n"
      "A config is a JSON object with these keys, all optional. An unknown key, a value of the wrong\n"
      "type or out of range is an error naming the key. `packtune run` overrides the keys with a flag;\n"
      "`packtune run --resume DIR` refuses a config that differs from the one the experiment ran with,\n"
      "except in the keys marked *may change*.\n"
      "\n"
      "| key | type | default | range or values | flag | on --resume | meaning |\n"
      "|---|---|---|---|---|---|---|\n";
  const auto cell = [](std::string text) {
    std::string escaped;
    for (char ch : text) escaped += ch == '|' ? std::string("\\|") : std::string(1, ch);
    return escaped;
  };
  for (const auto& k : keys()) {
    out += "| `" + std::string(k.name) + "` | " + k.type + " | " + cell(k.default_doc) + " | " + cell(k.limits_doc) +
           " | " + cell(k.flag) + " | " + (k.resume == Resume::MayChange ? "may change" : "fixed") + " | " +
           cell(k.doc) + " |\n";
  }
  return out;
}

}  // namespace config_table
}  // namespace packtune
