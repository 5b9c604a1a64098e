#pragma once
// The vocabulary of the config table (config_keys.def): the typed values of the keys that
// take one of a few words (fuse, mixed_packs, keep_checkpoints, mode, task), parsed once and
// written back word for word; the limits a number key has; what a CLI override checks;
// whether a key may change on --resume and whether the config as run records it.
#include <cstdint>
#include <iterator>
#include <limits>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "datasets/dataset.hpp"
#include "packing/planner.hpp"
#include "packtune/error.hpp"
#include "tuners/tuner.hpp"

namespace packtune {

// Trial checkpoints in DIR/checkpoints (docs/checkpoints.md).
enum class KeepCheckpoints { Needed, All };

// `name` as a results folder's name allows it: letters, digits, - _ and ., not . or .., at most
// kMaxNameLength; anything else is an InputError naming `where`.
void check_experiment_name(const std::string& name, const std::string& where);
// A config file's stem made such a name: other characters become _, cut to the length.
std::string experiment_name_from(const std::string& stem);
// A listen value the driver can bind without taking what is not its own: an inproc endpoint
// is an InputError naming `where` (no actor process could reach it).
void check_listen_syntax(const std::string& listen, const std::string& where);

// The words of an enum key, in the order its error message lists them.
template <class Enum>
struct EnumWords;
template <>
struct EnumWords<packing::FuseMode> {
  static constexpr std::pair<const char*, packing::FuseMode> words[] = {
      {"auto", packing::FuseMode::Auto}, {"always", packing::FuseMode::Always}, {"never", packing::FuseMode::Never}};
};
template <>
struct EnumWords<packing::MixedPacks> {
  static constexpr std::pair<const char*, packing::MixedPacks> words[] = {
      {"auto", packing::MixedPacks::Auto}, {"always", packing::MixedPacks::Always},
      {"never", packing::MixedPacks::Never}};
};
template <>
struct EnumWords<KeepCheckpoints> {
  static constexpr std::pair<const char*, KeepCheckpoints> words[] = {{"all", KeepCheckpoints::All},
                                                                      {"needed", KeepCheckpoints::Needed}};
};
template <>
struct EnumWords<datasets::Task> {
  static constexpr std::pair<const char*, datasets::Task> words[] = {
      {"classification", datasets::Task::Classification}, {"regression", datasets::Task::Regression}};
};
template <>
struct EnumWords<tuners::Mode> {
  static constexpr std::pair<const char*, tuners::Mode> words[] = {{"min", tuners::Mode::Min},
                                                                   {"max", tuners::Mode::Max}};
};

// "auto, always or never": the words of an enum key as its error message lists them.
template <class Enum>
std::string enum_words() {
  std::string out;
  const auto& words = EnumWords<Enum>::words;
  const std::size_t n = std::size(words);
  for (std::size_t i = 0; i < n; ++i) out += (i == 0 ? "" : i + 1 == n ? " or " : ", ") + std::string(words[i].first);
  return out;
}

// The word of `value`, as config.json records it.
template <class Enum>
std::string to_string(Enum value) {
  for (const auto& [word, v] : EnumWords<Enum>::words) {
    if (v == value) return word;
  }
  return "?";
}

// One of the words of Enum, else an InputError "WHERE: unknown value "TEXT"; expected ...".
template <class Enum>
Enum parse_enum(const std::string& text, const std::string& where) {
  for (const auto& [word, v] : EnumWords<Enum>::words) {
    if (text == word) return v;
  }
  throw InputError(where + ": unknown value \"" + text + "\"; expected " + enum_words<Enum>());
}

inline std::string to_string(KeepCheckpoints value) { return to_string<KeepCheckpoints>(value); }
inline std::string to_string(packing::FuseMode value) { return to_string<packing::FuseMode>(value); }
inline std::string to_string(packing::MixedPacks value) { return to_string<packing::MixedPacks>(value); }

namespace config_table {

// The longest duration a seconds key takes (about 3 years): the driver compares times on a
// 64-bit nanosecond clock (292 years) and logs whole seconds as an int (68 years).
constexpr double kMaxSeconds = 1e8;
// The shortest heartbeat: an idle actor or node wakes every 100 ms to send one, so a shorter
// period cannot be honoured.
constexpr double kMinHeartbeatSeconds = 0.1;

// The most steps a trial may train, 2^53: budgets are doubles and steps are counted in an
// int64; up to 2^53 every step count is a double exactly, so a budget maps to one step.
constexpr double kMaxSteps = 9007199254740992.0;
// The most reports budget.report_every may ask of a trial up to budget.max: each is a journal
// line and a results row, and the actor lists a job's report steps up front.
constexpr double kMaxReports = 100000;
// The longest experiment name: runs/NAME-YYYYmmdd-HHMMSS stays far below a file name's 255 bytes.
constexpr std::size_t kMaxNameLength = 100;

// What a key's value may be beyond its type. Integers: low to high; numbers: > or >= min,
// and <= max.
struct Limits {
  enum class Kind { Any, Integer, Number, ByteSize } kind = Kind::Any;
  std::int64_t low = 0, high = 0;
  double min = 0;
  bool open = false;  // min itself excluded
  double max = std::numeric_limits<double>::infinity();
};
constexpr Limits any() { return {}; }
constexpr Limits integer(std::int64_t low, std::int64_t high) { return {Limits::Kind::Integer, low, high, 0, false}; }
constexpr Limits positive(double high = std::numeric_limits<double>::infinity()) {
  return {Limits::Kind::Number, 0, 0, 0, true, high};
}
constexpr Limits non_negative() { return {Limits::Kind::Number, 0, 0, 0, false}; }
// Seconds: > 0 (or >= low, where a shorter time cannot work) up to kMaxSeconds.
constexpr Limits seconds(double low = 0) { return {Limits::Kind::Number, 0, 0, low, low == 0, kMaxSeconds}; }
// Seconds where 0 means "never".
constexpr Limits seconds_or_zero() { return {Limits::Kind::Number, 0, 0, 0, false, kMaxSeconds}; }
constexpr Limits byte_size() { return {Limits::Kind::ByteSize, 0, 0, 0, false}; }

// What a `packtune run` override checks before its key's own check: "--FLAG: MESSAGE".
// OptionalValue: the flag may come without its value (`--mlflow` alone: the default store),
// which then reaches the override as "".
struct FlagRule {
  enum class Kind { None, AtLeast, NotEmpty, OneValue, OptionalValue } kind = Kind::None;
  std::int64_t low = 0;
  const char* message = "";
};
constexpr FlagRule no_rule() { return {}; }
constexpr FlagRule at_least(std::int64_t low, const char* message) { return {FlagRule::Kind::AtLeast, low, message}; }
constexpr FlagRule not_empty(const char* message) { return {FlagRule::Kind::NotEmpty, 0, message}; }
constexpr FlagRule one_value(const char* message) { return {FlagRule::Kind::OneValue, 0, message}; }
constexpr FlagRule optional_value() { return {FlagRule::Kind::OptionalValue, 0, ""}; }

// Whether --resume accepts another value than the experiment ran with: where its actors are
// and how they join may change; anything that can change a trial's numbers may not.
enum class Resume { Fixed, MayChange };
// Whether the config as run (config.json, the journal's header) writes the value it ran with.
enum class Record { No, Always, IfNotEmpty };

// The value a key holds as the config as run writes it and the docs show its default: an
// enum as its word.
template <class T>
nlohmann::json json_of(const T& value) {
  if constexpr (std::is_enum_v<T>) {
    return to_string<T>(value);
  } else {
    return value;
  }
}

// A row of the table, for the docs and the checks that go over every key.
struct KeyInfo {
  const char* name;
  const char* type;         // as the docs name it
  std::string default_doc;  // the default as the docs show it
  std::string limits_doc;   // the range or the allowed values, or ""
  const char* doc;
  std::string flag;         // "--trials", or "" without one
  Resume resume;
};

// Every top-level key, in the table's order (config_doc.cpp).
const std::vector<KeyInfo>& keys();
// The keys and the run options as a Markdown page: docs/config.md (config_doc.cpp).
std::string markdown();

}  // namespace config_table
}  // namespace packtune
