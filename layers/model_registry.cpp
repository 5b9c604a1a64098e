#include "layers/model_registry.hpp"

#include "packtune/error.hpp"

namespace packtune::layers {

ModelRegistry& ModelRegistry::instance() {
  static ModelRegistry registry;
  return registry;
}

void ModelRegistry::add(ModelFamily family) {
  const auto name = family.declaration.name;
  if (families_.count(name)) throw InputError("model family \"" + name + "\" is registered twice");
  families_.emplace(name, std::move(family));
}

const ModelFamily* ModelRegistry::find(const std::string& name) const {
  auto it = families_.find(name);
  return it == families_.end() ? nullptr : &it->second;
}

std::vector<std::string> ModelRegistry::names() const {
  std::vector<std::string> out;
  for (const auto& [name, family] : families_) out.push_back(name);
  return out;
}

}  // namespace packtune::layers
