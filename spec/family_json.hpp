#pragma once
// Model family declarations as JSON: what `packtune-actor --describe-model-plugin` prints and
// the driver reads, so that the driver learns a plugin's families without loading LibTorch.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "layers/family_declaration.hpp"

namespace packtune::spec {

nlohmann::json families_to_json(const std::vector<layers::FamilyDeclaration>& families);
// Throws InputError, prefixed with `where`, for JSON that is not what families_to_json writes.
std::vector<layers::FamilyDeclaration> families_from_json(const nlohmann::json& json, const std::string& where);

}  // namespace packtune::spec
