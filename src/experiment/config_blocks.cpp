// The hand-written readers of the config's blocks (config_blocks.hpp says why they are not rows).
#include "experiment/config_blocks.hpp"

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <limits>

#include "packtune/error.hpp"

namespace packtune::config_table {

using nlohmann::json;

namespace {

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

}  // namespace packtune::config_table
