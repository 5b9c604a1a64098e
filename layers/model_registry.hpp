#pragma once
// The model families a process can build, by name: packtune's built-in families and those a
// model plugin registers. A family is its declaration (family_declaration.hpp) and a builder
// that makes one trial's model, with the layer library, from the trial's model hyper-parameters
// (every declared one present, defaults filled in, checked against the declaration).
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "layers/family_declaration.hpp"
#include "layers/layer.hpp"
#include "packtune/named_table.hpp"

namespace packtune::layers {

// The data a model is built for: inputs [B, channels, height, width] (a feature row is
// 1 x 1 x D) and `outputs` logits (the classes).
struct ModelInput {
  std::int64_t channels = 1;
  std::int64_t height = 28;
  std::int64_t width = 28;
  std::int64_t outputs = 10;
};

using ModelBuilder = std::function<std::shared_ptr<Layer>(const tuners::TrialConfig& params, const ModelInput& input)>;

struct ModelFamily {
  FamilyDeclaration declaration;
  ModelBuilder build;
};

class ModelRegistry {
 public:
  static ModelRegistry& instance();
  // Throws InputError when the name is taken.
  void add(ModelFamily family);
  // nullptr when no family has that name.
  const ModelFamily* find(const std::string& name) const { return families_.find(name); }
  std::vector<std::string> names() const { return families_.names(); }

 private:
  NamedTable<ModelFamily> families_;
};

}  // namespace packtune::layers
