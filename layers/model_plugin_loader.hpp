#pragma once
// Loads model plugins (layers/model_plugin.hpp) into ModelRegistry::instance(). A plugin
// stays loaded for the life of the process: the registry holds builders in its code.
#include <functional>
#include <string>
#include <vector>

#include "layers/family_declaration.hpp"

namespace packtune::layers {

// The names of the symbols a plugin must export, for messages and tests.
inline constexpr const char* kModelPluginVersionSymbol = "packtune_model_plugin_version";
inline constexpr const char* kRegisterModelsSymbol = "packtune_register_models";

// Loads the plugin at `path` and returns the names of the families it registered. Loading
// the same file again returns the same names and does nothing else. Throws InputError, one
// line naming the plugin, when the file is missing, cannot be loaded (the loader's reason),
// lacks one of the two symbols, was built against another interface version, registers a
// family whose name is taken (by the registry, or in `taken`: the built-in families), a
// family `check` refuses, or no family at all. Nothing is registered then.
std::vector<std::string> load_model_plugin(const std::string& path, const std::vector<std::string>& taken = {},
                                           const std::function<void(const FamilyDeclaration&)>& check = {});

}  // namespace packtune::layers
