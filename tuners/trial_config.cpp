#include "tuners/trial_config.hpp"

#include "packtune/error.hpp"

namespace packtune::tuners {

nlohmann::json to_json(const ParamValue& value) {
  return std::visit([](const auto& v) { return nlohmann::json(v); }, value);
}

nlohmann::json to_json(const TrialConfig& config) {
  nlohmann::json out = nlohmann::json::object();
  for (const auto& [name, value] : config) out[name] = to_json(value);
  return out;
}

ParamValue param_from_json(const nlohmann::json& value, const std::string& where) {
  if (value.is_boolean()) return value.get<bool>();
  if (value.is_number_integer()) return value.get<std::int64_t>();
  if (value.is_number_float()) return value.get<double>();
  if (value.is_string()) return value.get<std::string>();
  throw InputError(where + ": expected a number, string or bool, got " +
                   std::string(value.type_name()));
}

TrialConfig config_from_json(const nlohmann::json& value, const std::string& where) {
  if (!value.is_object()) throw InputError(where + ": expected an object, got " + std::string(value.type_name()));
  TrialConfig config;
  for (const auto& [name, v] : value.items()) config[name] = param_from_json(v, where + "." + name);
  return config;
}

double as_number(const ParamValue& value, const std::string& name) {
  if (const auto* b = std::get_if<bool>(&value)) return *b ? 1.0 : 0.0;
  if (const auto* i = std::get_if<std::int64_t>(&value)) return static_cast<double>(*i);
  if (const auto* d = std::get_if<double>(&value)) return *d;
  throw InputError(name + ": expected a number, got the string \"" +
                   std::get<std::string>(value) + "\"");
}

std::string to_string(const ParamValue& value) { return to_json(value).dump(); }

}  // namespace packtune::tuners
