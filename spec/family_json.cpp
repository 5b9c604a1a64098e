#include "spec/family_json.hpp"

#include "packtune/error.hpp"

namespace packtune::spec {
namespace {

using layers::HyperParameter;
using nlohmann::json;

// The words of the JSON, indexed by the enums' values.
const std::vector<std::string> kTypes = {"integer", "real", "boolean", "choice"};
const std::vector<std::string> kRoles = {"structure", "width", "value"};

std::size_t index_of(const std::vector<std::string>& words, const json& value, const std::string& at) {
  if (value.is_string()) {
    for (std::size_t i = 0; i < words.size(); ++i) {
      if (words[i] == value.get<std::string>()) return i;
    }
  }
  std::string list;
  for (const auto& w : words) list += (list.empty() ? "" : ", ") + w;
  throw InputError(at + ": " + value.dump() + " is not one of " + list);
}

const json& field(const json& object, const char* name, const std::string& at) {
  if (!object.is_object() || !object.contains(name)) throw InputError(at + ": missing \"" + name + "\"");
  return object.at(name);
}

}  // namespace

json families_to_json(const std::vector<layers::FamilyDeclaration>& families) {
  json out = json::array();
  for (const auto& f : families) {
    json parameters = json::array();
    for (const auto& p : f.hyperparameters) {
      json entry = {{"name", p.name},
                    {"type", kTypes[static_cast<std::size_t>(p.type)]},
                    {"role", kRoles[static_cast<std::size_t>(p.role)]},
                    {"default", tuners::to_json(p.default_value)},
                    {"help", p.help}};
      if (p.type == HyperParameter::Type::Integer || p.type == HyperParameter::Type::Real) {
        entry["low"] = p.low;
        entry["high"] = p.high;
      }
      if (p.type == HyperParameter::Type::Choice) entry["choices"] = p.choices;
      parameters.push_back(std::move(entry));
    }
    out.push_back({{"name", f.name}, {"hyperparameters", std::move(parameters)}});
  }
  return {{"families", std::move(out)}};
}

std::vector<layers::FamilyDeclaration> families_from_json(const json& in, const std::string& where) {
  std::vector<layers::FamilyDeclaration> out;
  const auto& families = field(in, "families", where);
  if (!families.is_array()) throw InputError(where + ": \"families\" is not a list");
  for (const auto& f : families) {
    layers::FamilyDeclaration family;
    const auto& name = field(f, "name", where);
    if (!name.is_string()) throw InputError(where + ": a family's name is not a string");
    family.name = name.get<std::string>();
    const std::string at = where + ", family " + family.name;
    const auto& parameters = field(f, "hyperparameters", at);
    if (!parameters.is_array()) throw InputError(at + ": \"hyperparameters\" is not a list");
    for (const auto& p : parameters) {
      HyperParameter h;
      const auto& n = field(p, "name", at);
      if (!n.is_string()) throw InputError(at + ": a hyper-parameter's name is not a string");
      h.name = n.get<std::string>();
      const std::string here = at + "." + h.name;
      h.type = static_cast<HyperParameter::Type>(index_of(kTypes, field(p, "type", here), here + ".type"));
      h.role = static_cast<HyperParameter::Role>(index_of(kRoles, field(p, "role", here), here + ".role"));
      h.default_value = tuners::param_from_json(field(p, "default", here), here + ".default");
      if (p.contains("help") && p.at("help").is_string()) h.help = p.at("help").get<std::string>();
      if (h.type == HyperParameter::Type::Integer || h.type == HyperParameter::Type::Real) {
        const auto& low = field(p, "low", here);
        const auto& high = field(p, "high", here);
        if (!low.is_number() || !high.is_number()) throw InputError(here + ": low and high are not numbers");
        h.low = low.get<double>();
        h.high = high.get<double>();
      }
      if (h.type == HyperParameter::Type::Choice) {
        const auto& choices = field(p, "choices", here);
        if (!choices.is_array()) throw InputError(here + ".choices: not a list");
        for (const auto& c : choices) {
          if (!c.is_string()) throw InputError(here + ".choices: " + c.dump() + " is not a string");
          h.choices.push_back(c.get<std::string>());
        }
      }
      family.hyperparameters.push_back(std::move(h));
    }
    out.push_back(std::move(family));
  }
  return out;
}

}  // namespace packtune::spec
