#pragma once
// A model plugin loaded into an actor: its builders go to layers::ModelRegistry (what
// build_model asks for a family packtune does not build itself) and its declarations to
// DeclaredFamilies (what parse_trial_spec checks a trial's hyper-parameters against).
#include <string>
#include <vector>

#include "layers/family_declaration.hpp"

namespace packtune::actors {

// Returns the declarations of the families the plugin registers. Loading the same path again
// does nothing more. Throws InputError, one line naming the plugin (layers/model_plugin_loader.hpp).
std::vector<layers::FamilyDeclaration> load_model_plugin(const std::string& path);

}  // namespace packtune::actors
