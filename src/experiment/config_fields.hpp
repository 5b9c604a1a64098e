#pragma once
// Reading one JSON object of the config strictly, for the table's rows (config_keys.cpp) and
// the hand-written blocks (config_blocks.cpp) alike: each key read once, with its type and
// range checked, and every key no one read refused, so that a typo does not fall back to a
// default unnoticed.
#include <cstdint>
#include <limits>
#include <set>
#include <string>
#include <utility>

#include <nlohmann/json.hpp>

#include "packtune/error.hpp"

namespace packtune::config_table {

// 100000000 rather than 1e+08 or 100000000.0: limits as a user writes them.
std::string number_text(double d);

// The keys of one JSON object, read once each; finish() refuses the ones no one read.
class Fields {
 public:
  using json = nlohmann::json;

  // `where` names the object in messages ("data.augment"); "" is the config itself.
  Fields(const json& object, std::string where);

  bool has(const char* key) const { return object_.contains(key); }
  const json& value(const char* key) const { return object_.at(key); }
  std::string at(const char* key) const { return where_.empty() ? key : where_ + "." + key; }

  const json& get(const char* key, json::value_t kind, const char* expected);

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
              double high = std::numeric_limits<double>::infinity());
  const json& object(const char* key);
  void mark(const char* key) { seen_.insert(key); }

  // Every key not read is unknown: a typo must not silently fall back to a default.
  void finish() const;
  void allow(std::string list) { allowed_ = std::move(list); }

 private:
  static std::string type_of(const json& v);
  const json& object_;
  std::string where_;
  std::set<std::string> seen_;
  std::string allowed_;
};

}  // namespace packtune::config_table
