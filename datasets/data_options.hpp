#pragma once
// The config's data block (docs/data.md) as DataOptions, from one table: datasets/data_keys.def
// declares each key once, with its member, default, the formats that read it and whether it is
// a path. Plain C++: the driver reads and checks it, and sends it to every actor as JSON.
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "datasets/dataset.hpp"

namespace packtune::datasets {

enum class DataFormat { Idx, Hdf5, Npy };
const char* to_string(DataFormat format);
// "idx", "hdf5" or "npy"; anything else is an InputError "WHERE: unknown format ...".
DataFormat parse_data_format(const std::string& word, const std::string& where);
// DataOptions::order_per_trial as its config word ("shared" or "per_trial"), and back; another
// word is an InputError "WHERE: unknown order ...".
const char* order_name(bool per_trial);
bool parse_data_order(const std::string& word, const std::string& where);

// The formats column of data_keys.def: which formats read a key, as bits of format_bit().
namespace data_formats {
constexpr unsigned NONE = 0, IDX = 1, HDF5 = 2, NPY = 4, ALL = IDX | HDF5 | NPY;
}
constexpr unsigned format_bit(DataFormat format) { return 1u << static_cast<unsigned>(format); }

// The codec column of data_keys.def: how a key's value is written in the config and its JSON.
namespace data_codecs {
struct Plain {};         // as its type is: a string, an integer or a boolean
struct FormatWord {};    // DataFormat as to_string() spells it
struct OrderWord {};     // order_per_trial as order_name() spells it
struct AugmentBlock {};  // Augment as the object of its own keys
}  // namespace data_codecs

// Random crops (after zero padding) and horizontal flips of training images, drawn per trial
// and step from the trial's seed (batch_stream.hpp): data.augment's keys.
struct Augment {
#define DATA_AUGMENT_KEY(key, Type, default_value, high, doc) Type key = default_value;
#include "datasets/data_keys.def"
  bool any() const { return crop_padding > 0 || flip; }
};

struct DataOptions {
  Task task = Task::Classification;  // the config's top-level key "task"
#define DATA_KEY(key, member, Type, default_value, codec, formats, paths, high, doc) Type member = default_value;
#include "datasets/data_keys.def"
};

// One row of data_keys.def, for the reader's messages and the docs.
struct DataKeyRow {
  std::string key;      // "augment.flip" for a key of the augment block
  std::string type;     // as the docs name it: string, integer, boolean, object, or a word's values
  std::string default_text;
  unsigned formats;     // data_formats bits
  std::int64_t high;    // an integer's largest value; 0 for the others
  std::string doc;
};
const std::vector<DataKeyRow>& data_key_rows();
// The keys `format` reads, in the table's order: "format, name, dir, ...".
std::string data_keys(DataFormat format);

// All of the options as JSON (what the driver sends its actors, and the config as run's data
// block with every default spelled out), and back: an unknown format or task, a missing key or
// a wrong type is an InputError naming "data". A run recorded before `order` existed reads as
// shared.
void to_json(nlohmann::json& j, const DataOptions& options);
void from_json(const nlohmann::json& j, DataOptions& options);

}  // namespace packtune::datasets
