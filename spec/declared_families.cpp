#include "spec/declared_families.hpp"

#include <algorithm>
#include <cctype>
#include <set>

#include "packtune/error.hpp"
#include "spec/trial_spec.hpp"

namespace packtune::spec {

DeclaredFamilies& DeclaredFamilies::instance() {
  static DeclaredFamilies families;
  return families;
}

namespace {

bool same(const layers::FamilyDeclaration& a, const layers::FamilyDeclaration& b) {
  if (a.name != b.name || a.hyperparameters.size() != b.hyperparameters.size()) return false;
  for (std::size_t i = 0; i < a.hyperparameters.size(); ++i) {
    const auto& x = a.hyperparameters[i];
    const auto& y = b.hyperparameters[i];
    if (x.name != y.name || x.type != y.type || x.low != y.low || x.high != y.high || x.choices != y.choices ||
        x.default_value != y.default_value || x.role != y.role) {
      return false;
    }
  }
  return true;
}

bool plain_word(const std::string& s) {
  return !s.empty() && s.size() <= 100 && std::all_of(s.begin(), s.end(), [](unsigned char c) {
    return std::isalnum(c) || c == '_' || c == '-';
  });
}

}  // namespace

void DeclaredFamilies::add(const layers::FamilyDeclaration& family) {
  check_declaration(family);
  const auto& builtin = builtin_families();
  if (std::find(builtin.begin(), builtin.end(), family.name) != builtin.end()) {
    throw InputError("model family \"" + family.name + "\" is packtune's own; give the plugin's family another name");
  }
  if (const auto* known = families_.find(family.name)) {
    if (same(*known, family)) return;
    throw InputError("model family \"" + family.name + "\" is declared twice, differently");
  }
  families_.insert(family.name, family);
}

const std::vector<std::string>& builtin_families() {
  static const std::vector<std::string> names = {"mlp", "cnn", "resnet", "torchscript"};
  return names;
}

const std::vector<std::string>& common_hyperparameters() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out = {"family"};
    for (const auto& name : training_hyperparameters()) out.push_back(name);
    return out;
  }();
  return names;
}

void check_declaration(const layers::FamilyDeclaration& family) {
  const std::string where = "model family \"" + family.name + "\"";
  if (!plain_word(family.name)) {
    throw InputError(where + ": a family's name is 1 to 100 letters, digits, _ or -");
  }
  const auto& common = common_hyperparameters();
  std::set<std::string> seen;
  for (const auto& p : family.hyperparameters) {
    const std::string at = where + ", hyper-parameter \"" + p.name + "\"";
    if (!plain_word(p.name)) throw InputError(at + ": a name is 1 to 100 letters, digits, _ or -");
    if (!seen.insert(p.name).second) throw InputError(at + ": declared twice");
    if (std::find(common.begin(), common.end(), p.name) != common.end()) {
      throw InputError(at + ": every family takes it already (the optimizer's and batch_size are common)");
    }
    using Type = layers::HyperParameter::Type;
    if ((p.type == Type::Integer || p.type == Type::Real) && !(p.low <= p.high)) {
      throw InputError(at + ": its range is empty (low above high)");
    }
    if (p.type == Type::Choice && p.choices.empty()) throw InputError(at + ": a choice needs choices");
    declared_value(p, p.default_value, at + ", its default");
  }
}

}  // namespace packtune::spec
