#include "actors/model_plugins.hpp"

#include "actors/declared_families.hpp"
#include "layers/model_plugin_loader.hpp"
#include "layers/model_registry.hpp"
#include "packtune/error.hpp"

namespace packtune::actors {

std::vector<layers::FamilyDeclaration> load_model_plugin(const std::string& path) {
  const auto names = layers::load_model_plugin(path, builtin_families(), check_declaration);
  std::vector<layers::FamilyDeclaration> families;
  for (const auto& name : names) {
    const auto& declaration = layers::ModelRegistry::instance().find(name)->declaration;
    DeclaredFamilies::instance().add(declaration);
    families.push_back(declaration);
  }
  return families;
}

}  // namespace packtune::actors
