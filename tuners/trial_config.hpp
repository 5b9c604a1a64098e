#pragma once
// A trial's hyper-parameters: name -> value. Values keep their JSON kind (integer, real,
// string, bool) so a tuner, the wire and results.jsonl all see the same thing.
#include <cstdint>
#include <map>
#include <string>
#include <variant>

#include <nlohmann/json.hpp>

namespace packtune::tuners {

using TrialId = std::int64_t;
using ParamValue = std::variant<bool, std::int64_t, double, std::string>;
using TrialConfig = std::map<std::string, ParamValue>;

nlohmann::json to_json(const ParamValue& value);
nlohmann::json to_json(const TrialConfig& config);
// Throws InputError naming `where` when the JSON value is not a scalar.
ParamValue param_from_json(const nlohmann::json& value, const std::string& where);
// The inverse of to_json(TrialConfig); throws InputError naming `where` for anything else.
TrialConfig config_from_json(const nlohmann::json& value, const std::string& where);

// Numeric view of a value (bool -> 0/1); throws InputError for strings.
double as_number(const ParamValue& value, const std::string& name);
std::string to_string(const ParamValue& value);

}  // namespace packtune::tuners
