// DataOptions from its table (data_keys.def): the words of its enums, the rows the reader and
// the docs read, and the JSON the driver sends to every actor (protocol::ExperimentSpec::data)
// and records in the config as run.
#include "datasets/data_options.hpp"

#include <nlohmann/json.hpp>

#include "packtune/error.hpp"

namespace packtune::datasets {

using nlohmann::json;

const char* to_string(DataFormat format) {
  switch (format) {
    case DataFormat::Idx: return "idx";
    case DataFormat::Hdf5: return "hdf5";
    case DataFormat::Npy: return "npy";
  }
  return "?";
}

DataFormat parse_data_format(const std::string& word, const std::string& where) {
  for (const auto format : {DataFormat::Idx, DataFormat::Hdf5, DataFormat::Npy}) {
    if (word == to_string(format)) return format;
  }
  throw InputError(where + ": unknown format \"" + word + "\"; expected idx, hdf5 or npy");
}

const char* order_name(bool per_trial) { return per_trial ? "per_trial" : "shared"; }

bool parse_data_order(const std::string& word, const std::string& where) {
  if (word != "shared" && word != "per_trial") {
    throw InputError(where + ": unknown order \"" + word + "\"; expected shared or per_trial");
  }
  return word == "per_trial";
}

using namespace data_formats;
using namespace data_codecs;

namespace {

// A value as its codec writes it, and back.
template <class T>
json write(const T& value, Plain) {
  return value;
}
json write(DataFormat value, FormatWord) { return to_string(value); }
json write(bool per_trial, OrderWord) { return order_name(per_trial); }
json write(const Augment& a, AugmentBlock) {
  json out;
#define DATA_AUGMENT_KEY(key, Type, default_value, high, doc) out[#key] = a.key;
#include "datasets/data_keys.def"
  return out;
}

// Key `key` of the options' JSON `j`; a key missing is an error, but order (below).
template <class T>
void read(const json& j, const char* key, T& out, Plain) {
  out = j.at(key).get<T>();
}
void read(const json& j, const char* key, DataFormat& out, FormatWord) {
  out = parse_data_format(j.at(key).get<std::string>(), std::string("data.") + key);
}
// A run recorded before the key existed lacks it: its order was shared.
void read(const json& j, const char* key, bool& out, OrderWord) {
  out = parse_data_order(j.value(key, std::string(order_name(false))), std::string("data.") + key);
}
void read(const json& j, const char* key, Augment& out, AugmentBlock) {
  const auto& block = j.at(key);
#define DATA_AUGMENT_KEY(key, Type, default_value, high, doc) out.key = block.at(#key).get<Type>();
#include "datasets/data_keys.def"
}

template <class T>
std::string type_text(const T&, Plain) {
  if constexpr (std::is_same_v<T, bool>) return "boolean";
  if constexpr (std::is_integral_v<T>) return "integer";
  return "string";
}
std::string type_text(DataFormat, FormatWord) { return "idx, hdf5 or npy"; }
std::string type_text(bool, OrderWord) { return "shared or per_trial"; }
std::string type_text(const Augment&, AugmentBlock) { return "object"; }

template <class T, class Codec>
std::string default_text(const T& value, Codec codec) {
  if constexpr (std::is_same_v<Codec, AugmentBlock>) return "no augmentation";
  return write(value, codec).dump();
}

}  // namespace

const std::vector<DataKeyRow>& data_key_rows() {
  static const std::vector<DataKeyRow> rows = [] {
    std::vector<DataKeyRow> out;
    const DataOptions defaults;
#define DATA_KEY(key, member, Type, default_value, codec, formats, paths, high, doc) \
  out.push_back({#key, type_text(defaults.member, codec{}), default_text(defaults.member, codec{}), formats, high, doc});
#define DATA_AUGMENT_KEY(key, Type, default_value, high, doc) \
  out.push_back({"augment." #key, type_text(defaults.augment.key, Plain{}), json(defaults.augment.key).dump(), ALL, high, doc});
#include "datasets/data_keys.def"
    return out;
  }();
  return rows;
}

std::string data_keys(DataFormat format) {
  std::string out;
#define DATA_KEY(key, member, Type, default_value, codec, formats, paths, high, doc) \
  if ((formats) & format_bit(format)) out += std::string(out.empty() ? "" : ", ") + #key;
#include "datasets/data_keys.def"
  return out;
}

void to_json(json& j, const DataOptions& o) {
  j = {{"task", to_string(o.task)}};
#define DATA_KEY(key, member, Type, default_value, codec, formats, paths, high, doc) j[#key] = write(o.member, codec{});
#include "datasets/data_keys.def"
}

void from_json(const json& j, DataOptions& o) {
  try {
    const auto task = j.at("task").get<std::string>();
    if (task != "classification" && task != "regression") {
      throw InputError("data.task: unknown task \"" + task + "\"; expected classification or regression");
    }
    o.task = task == "classification" ? Task::Classification : Task::Regression;
#define DATA_KEY(key, member, Type, default_value, codec, formats, paths, high, doc) read(j, #key, o.member, codec{});
#include "datasets/data_keys.def"
  } catch (const nlohmann::json::exception& e) {
    throw InputError(std::string("data: malformed data options (") + e.what() + ")");
  }
}

}  // namespace packtune::datasets
