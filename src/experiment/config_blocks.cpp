// The hand-written readers of the config's blocks (config_blocks.hpp says why they are not rows).
#include "experiment/config_blocks.hpp"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstdlib>
#include <filesystem>

#include "packtune/error.hpp"

namespace packtune::config_table {

using nlohmann::json;

namespace {

// A data file's path relative to the config file `config_path`'s folder, absolute.
std::string beside_config(const std::string& file, const std::string& config_path) {
  if (file.empty() || std::filesystem::path(file).is_absolute()) return file;
  return (std::filesystem::absolute(config_path).parent_path() / file).lexically_normal().string();
}

void read_augment_key(Fields& a, const char* key, bool& out, std::int64_t) { a.boolean(key, out); }
void read_augment_key(Fields& a, const char* key, int& out, std::int64_t high) { a.integer(key, out, 0, high); }

// A data key that names a file or folder, beside the config; the others are no paths.
void resolve_path(std::string& file, const std::string& config_path) { file = beside_config(file, config_path); }
template <class T>
void resolve_path(T&, const std::string&) {}

// One key of the data block, read as its codec (data_keys.def) says; `high` bounds an integer.
void read_data_key(Fields& d, const char* key, std::string& out, datasets::data_codecs::Plain, std::int64_t) {
  d.string(key, out);
}
void read_data_key(Fields& d, const char* key, bool& out, datasets::data_codecs::Plain, std::int64_t) {
  d.boolean(key, out);
}
void read_data_key(Fields& d, const char* key, std::uint32_t& out, datasets::data_codecs::Plain, std::int64_t high) {
  d.integer(key, out, 0, high);
}
void read_data_key(Fields& d, const char* key, datasets::DataFormat& out, datasets::data_codecs::FormatWord,
                   std::int64_t) {
  std::string word = datasets::to_string(out);
  d.string(key, word);
  out = datasets::parse_data_format(word, std::string("data.") + key);
}
void read_data_key(Fields& d, const char* key, bool& out, datasets::data_codecs::OrderWord, std::int64_t) {
  std::string word = datasets::order_name(out);
  d.string(key, word);
  out = datasets::parse_data_order(word, std::string("data.") + key);
}
void read_data_key(Fields& d, const char* key, datasets::Augment& out, datasets::data_codecs::AugmentBlock,
                   std::int64_t) {
  if (!d.has(key)) return;
  Fields a(d.object(key), std::string("data.") + key);
  std::string keys;
#define DATA_AUGMENT_KEY(key, Type, default_value, high, doc) keys += std::string(keys.empty() ? "" : ", ") + #key;
#include "datasets/data_keys.def"
  a.allow(keys);
#define DATA_AUGMENT_KEY(key, Type, default_value, high, doc) read_augment_key(a, #key, out.key, high);
#include "datasets/data_keys.def"
  a.finish();
}

}  // namespace

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
  // The format first: it says which keys the block may hold.
  read_data_key(d, "format", data.format, datasets::data_codecs::FormatWord{}, 0);
  const std::string keys = datasets::data_keys(data.format);
  d.allow(keys);
  for (const auto& row : datasets::data_key_rows()) {
    if (block.contains(row.key) && !(row.formats & datasets::format_bit(data.format))) {
      throw InputError("data." + row.key + ": not read by format " + datasets::to_string(data.format) +
                       "; its keys are " + keys);
    }
  }
  using namespace datasets::data_formats;
  const unsigned format = datasets::format_bit(data.format);
#define DATA_KEY(key, member, Type, default_value, codec, formats, paths, high, doc) \
  if (std::string(#key) != "format" && ((formats) & format)) {                        \
    read_data_key(d, #key, data.member, datasets::data_codecs::codec{}, high);        \
  }
#include "datasets/data_keys.def"
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
  // Paths beside the config; dir's default is absolute already, and an empty one stays empty.
#define DATA_KEY(key, member, Type, default_value, codec, formats, paths, high, doc) \
  if ((paths) & format) resolve_path(data.member, path);
#include "datasets/data_keys.def"
  d.finish();
}

json data_as_run(const datasets::DataOptions& data) {
  json all = data;
  json out = json::object();
  const std::string keys = ", " + datasets::data_keys(data.format) + ",";
  for (const auto& [key, value] : all.items()) {
    const bool empty_test = (key == "test_path" || key == "test_x" || key == "test_y") && value == "";
    if (keys.find(", " + key + ",") != std::string::npos && !empty_test) out[key] = value;
  }
  return out;
}

json export_as_run(const ExperimentConfig& c) {
  if (c.export_mlflow.empty() && c.export_tensorboard.empty()) return nullptr;
  json out = json::object();
  if (!c.export_mlflow.empty()) out["mlflow"] = c.export_mlflow;
  if (!c.export_tensorboard.empty()) out["tensorboard"] = c.export_tensorboard;
  return out;
}

std::string folder_against(const std::string& value, const std::filesystem::path& base) {
  return (std::filesystem::absolute(base) / value).lexically_normal().string();
}

std::string mlflow_store(const std::string& value, const std::filesystem::path& base, const std::string& key) {
  // RFC 3986's scheme; two characters at least, so that C:\ (a drive) is no scheme.
  const auto colon = value.find(':');
  const bool scheme = colon != std::string::npos && colon >= 2 &&
                      std::all_of(value.begin(), value.begin() + static_cast<std::ptrdiff_t>(colon), [](char ch) {
                        return std::isalnum(static_cast<unsigned char>(ch)) || ch == '+' || ch == '-' || ch == '.';
                      }) &&
                      std::isalpha(static_cast<unsigned char>(value.front()));
  if (!scheme) return folder_against(value, base);
  // RFC 3986's userinfo: after "//", before the authority's "@"; a colon in it sets a password.
  if (value.compare(colon + 1, 2, "//") == 0) {
    const auto authority = value.substr(colon + 3, value.find_first_of("/?#", colon + 3) - (colon + 3));
    const auto at = authority.rfind('@');
    if (at != std::string::npos && authority.find(':') < at) {
      throw InputError(key + ": the tracking URI holds a password, which the run's config.json and journal would "
                       "keep; give the user and password in MLFLOW_TRACKING_USERNAME and MLFLOW_TRACKING_PASSWORD "
                       "and the URI without them");
    }
  }
  return value;
}

void read_export(Fields& top, ExperimentConfig& c, const std::string& path) {
  if (!top.has("export")) return;
  Fields e(top.object("export"), "export");
  e.allow("mlflow, tensorboard");
  const auto folder = std::filesystem::absolute(path).parent_path();
  if (e.has("mlflow") && e.value("mlflow").is_boolean()) {
    bool on = false;
    e.boolean("mlflow", on);
    c.export_mlflow = on ? mlflow_store("mlruns", folder, "export.mlflow") : "";
  } else if (e.has("mlflow")) {
    const auto& v = e.get("mlflow", json::value_t::string, "true, false, a tracking URI or a folder");
    if (v.get<std::string>().empty()) {
      throw InputError("export.mlflow: \"\" names no store; expected true, a tracking URI or a folder");
    }
    c.export_mlflow = mlflow_store(v.get<std::string>(), folder, "export.mlflow");
  }
  if (e.has("tensorboard")) {
    const auto& v = e.get("tensorboard", json::value_t::string, "a folder for the event files");
    if (v.get<std::string>().empty()) throw InputError("export.tensorboard: \"\" names no folder; expected a folder");
    c.export_tensorboard = folder_against(v.get<std::string>(), folder);
  }
  e.finish();
}

namespace {

// A TorchScript model's "path" (docs/models.md): a file beside the config, like model_plugin.
// Resolved in the config as run too, so --resume finds the files from the results folder.
bool torchscript_model(const ExperimentConfig& c) {
  const auto it = c.model.find("family");
  return it != c.model.end() && it->second == tuners::ParamValue(std::string("torchscript"));
}

void resolve_torchscript_path(json& value, const std::string& config_path) {
  if (value.is_string()) value = beside_config(value.get<std::string>(), config_path);
}

}  // namespace

void read_model(Fields& top, ExperimentConfig& c, const std::string& path) {
  if (!top.has("model")) return;
  auto model = top.object("model");
  for (const auto& [key, value] : model.items()) {
    c.model[key] = tuners::param_from_json(value, "model." + key);
  }
  if (torchscript_model(c) && model.contains("path")) {
    resolve_torchscript_path(model["path"], path);
    c.model["path"] = tuners::param_from_json(model["path"], "model.path");
    c.source["model"] = model;
  }
}

void read_space(Fields& top, ExperimentConfig& c, const std::string& path) {
  if (!top.has("space")) return;
  auto space = top.object("space");
  if (torchscript_model(c) && space.contains("path") && space["path"].is_object() &&
      space["path"].contains("values") && space["path"]["values"].is_array()) {
    for (auto& value : space["path"]["values"]) resolve_torchscript_path(value, path);
    c.source["space"] = space;
  }
  c.space = tuners::SearchSpace::from_json(space, "space");
}

}  // namespace packtune::config_table
