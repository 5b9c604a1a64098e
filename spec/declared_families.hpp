#pragma once
// The model families this process knows by their declarations alone, in plain C++: those of
// the model plugins an actor loaded, or that `packtune-actor --describe-model-plugin` told the
// driver about. parse_trial_spec checks a plugin family's hyper-parameters against them, and
// the fusion keys read their roles, without LibTorch.
#include <string>
#include <vector>

#include "layers/family_declaration.hpp"
#include "packtune/named_table.hpp"

namespace packtune::spec {

class DeclaredFamilies {
 public:
  static DeclaredFamilies& instance();

  // Throws InputError, naming the family, for a name a built-in family has or another
  // declaration took (the same declaration again is kept once), and for a declaration that
  // contradicts itself (check_declaration).
  void add(const layers::FamilyDeclaration& family);
  // nullptr when no plugin declared that name.
  const layers::FamilyDeclaration* find(const std::string& name) const { return families_.find(name); }
  std::vector<std::string> names() const { return families_.names(); }

 private:
  NamedTable<layers::FamilyDeclaration> families_;
};

// The families packtune builds itself: no plugin may take their names.
const std::vector<std::string>& builtin_families();
// The hyper-parameters every family takes (the optimizer's and batch_size), which a plugin
// family may not declare.
const std::vector<std::string>& common_hyperparameters();

// `value` checked against a declared hyper-parameter (type, range, choices) and in the type
// its builder reads: an Integer as std::int64_t (64.0 counts), a Real as double. Throws
// InputError naming `at` (model.<key>, space.<key>).
tuners::ParamValue declared_value(const layers::HyperParameter& parameter, const tuners::ParamValue& value,
                                  const std::string& at);

// Throws InputError for a declaration whose name is empty or not a plain word, whose
// hyper-parameters repeat a name or take a common one, or whose default lies outside its own
// range or choices.
void check_declaration(const layers::FamilyDeclaration& family);

}  // namespace packtune::spec
