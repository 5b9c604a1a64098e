#pragma once
// What a model family declares about itself, in plain C++ (no LibTorch), so that the driver can
// check a config's "model" and "space" against it before any actor starts: its name and its
// hyper-parameters, each with a type, a range or choices, a default, and a role that says how
// trials that differ in it may fuse.
#include <string>
#include <vector>

#include "tuners/trial_config.hpp"

namespace packtune::layers {

struct HyperParameter {
  enum class Type { Integer, Real, Boolean, Choice };
  // Structure: changes the layers; trials fuse only with equal values.
  // Width: changes sizes only; trials of unlike values fuse padded (fuse "always").
  // Value: a per-member value the layers take as it is (a dropout rate); trials fuse freely.
  enum class Role { Structure, Width, Value };

  std::string name;
  Type type = Type::Integer;
  double low = 0, high = 0;          // Integer and Real: the inclusive range
  std::vector<std::string> choices;  // Choice
  tuners::ParamValue default_value;
  Role role = Role::Structure;
  std::string help;                  // one line, for `packtune config` and errors
};

struct FamilyDeclaration {
  std::string name;
  std::vector<HyperParameter> hyperparameters;
};

}  // namespace packtune::layers
