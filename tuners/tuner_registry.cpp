#include "tuners/tuner_registry.hpp"

#include <utility>

#include "packtune/error.hpp"

namespace packtune::tuners {

void register_builtin_tuners(TunerRegistry& registry);  // builtin_tuners.cpp

TunerRegistry& TunerRegistry::instance() {
  static TunerRegistry* registry = [] {
    auto* r = new TunerRegistry;
    register_builtin_tuners(*r);
    return r;
  }();
  return *registry;
}

void TunerRegistry::add(const std::string& name, Factory factory, int interface_version) {
  if (interface_version != kTunerInterfaceVersion) {
    throw Error("tuner \"" + name + "\" was built against version " + std::to_string(interface_version) +
                " of packtune's tuner interface, and this packtune has version " +
                std::to_string(kTunerInterfaceVersion) + "; rebuild the plugin against this packtune's headers");
  }
  if (factories_.count(name)) {
    throw Error("tuner \"" + name + "\" is registered twice; rename one of them");
  }
  factories_[name] = std::move(factory);
}

bool TunerRegistry::contains(const std::string& name) const { return factories_.count(name) > 0; }

std::vector<std::string> TunerRegistry::names() const {
  std::vector<std::string> out;
  for (const auto& [name, _] : factories_) out.push_back(name);
  return out;
}

std::unique_ptr<Tuner> TunerRegistry::create(const std::string& name,
                                             const TunerContext& context) const {
  auto it = factories_.find(name);
  if (it == factories_.end()) {
    std::string list;
    for (const auto& n : names()) list += (list.empty() ? "" : ", ") + n;
    throw InputError("tuner: unknown tuner \"" + name + "\"; expected one of " + list +
                     " (or load a plugin with --tuner-plugin)");
  }
  return it->second(context);
}

std::vector<std::string> TunerRegistry::take_registration_errors() {
  return std::exchange(registration_errors_, {});
}

void TunerRegistry::add_registration_error(std::string message) {
  registration_errors_.push_back(std::move(message));
}

}  // namespace packtune::tuners
