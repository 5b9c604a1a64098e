#pragma once
// A model plugin loaded into an actor: its builders go to layers::ModelRegistry (what
// build_model asks for a family packtune does not build itself) and its declarations to
// DeclaredFamilies (what parse_trial_spec checks a trial's hyper-parameters against). A
// plugin's builder is code packtune does not control: build_plugin_model turns whatever it
// does wrong into an Error naming it, which fails the trial and nothing else.
#include <memory>
#include <string>
#include <vector>

#include "layers/family_declaration.hpp"
#include "layers/layer.hpp"
#include "layers/model_registry.hpp"

namespace packtune::actors {

// Returns the declarations of the families the plugin registers. Loading the same path again
// does nothing more. Throws InputError, one line naming the plugin (layers/model_plugin_loader.hpp).
std::vector<layers::FamilyDeclaration> load_model_plugin(const std::string& path);

// Calls `family`'s builder and checks what it built, on one example of zeros, before any
// trial trains it: the model's outputs for inputs [1, 1, ...sample] (`images`: C, H, W; else
// the feature row's W) must be [1, 1, input.outputs], the classes or regression targets the
// loss takes. Throws one line that names the plugin (when load_model_plugin loaded it) and
// the family: for a builder that throws anything (InputError stays InputError, the rest is
// Error), returns no model, or builds one whose outputs have another shape or that fails on
// the example. The model is returned in training mode, as built.
std::shared_ptr<layers::Layer> build_plugin_model(const layers::ModelFamily& family, const tuners::TrialConfig& params,
                                                  const layers::ModelInput& input, bool images);

}  // namespace packtune::actors
