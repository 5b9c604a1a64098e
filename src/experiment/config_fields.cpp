#include "experiment/config_fields.hpp"

#include <cmath>

namespace packtune::config_table {

std::string number_text(double d) {
  if (d == std::floor(d) && std::fabs(d) < 1e16) return std::to_string(static_cast<std::int64_t>(d));
  return nlohmann::json(d).dump();
}

Fields::Fields(const json& object, std::string where) : object_(object), where_(std::move(where)) {
  if (!object_.is_object()) {
    throw InputError((where_.empty() ? std::string("the config") : where_) + ": expected an object, got " +
                     std::string(object_.type_name()));
  }
}

const nlohmann::json& Fields::get(const char* key, json::value_t kind, const char* expected) {
  seen_.insert(key);
  const auto& v = object_.at(key);
  const bool ok = kind == json::value_t::number_float ? v.is_number() : v.type() == kind ||
                  (kind == json::value_t::number_unsigned && v.is_number_integer());
  if (!ok) throw InputError(at(key) + ": expected " + expected + ", got " + type_of(v));
  return v;
}

void Fields::number(const char* key, double& out, double low, bool low_open, double high) {
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

const nlohmann::json& Fields::object(const char* key) {
  seen_.insert(key);
  const auto& v = object_.at(key);
  if (!v.is_object()) throw InputError(at(key) + ": expected an object, got " + type_of(v));
  return v;
}

void Fields::finish() const {
  for (const auto& [key, _] : object_.items()) {
    if (!seen_.count(key)) {
      throw InputError((where_.empty() ? key : where_ + "." + key) + ": unknown key; expected one of " +
                       allowed_);
    }
  }
}

std::string Fields::type_of(const json& v) {
  if (v.is_number_integer()) return "an integer (" + v.dump() + ")";
  if (v.is_number()) return "a number (" + v.dump() + ")";
  return std::string(v.type_name());
}

}  // namespace packtune::config_table
