#include "layers/model_registry.hpp"

#include "packtune/error.hpp"

namespace packtune::layers {

ModelRegistry& ModelRegistry::instance() {
  static ModelRegistry registry;
  return registry;
}

void ModelRegistry::add(ModelFamily family) {
  const auto name = family.declaration.name;
  if (!families_.insert(name, std::move(family))) throw InputError("model family \"" + name + "\" is registered twice");
}

}  // namespace packtune::layers
