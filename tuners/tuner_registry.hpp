#pragma once
// Tuners by name. Built-in tuners and plugins register the same way, with one macro:
//
//   class MyTuner : public packtune::tuners::Tuner { ... };
//   PACKTUNE_REGISTER_TUNER(MyTuner, "my_tuner")
//
// MyTuner needs a constructor taking `const packtune::tuners::TunerContext&`.
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "tuners/tuner.hpp"

namespace packtune::tuners {

class TunerRegistry {
 public:
  using Factory = std::function<std::unique_ptr<Tuner>(const TunerContext&)>;

  static TunerRegistry& instance();

  // `interface_version`: the kTunerInterfaceVersion the factory's code was compiled with
  // (the caller's, as the default argument is filled in where add is called). A mismatch is
  // an error saying to rebuild the plugin.
  void add(const std::string& name, Factory factory, int interface_version = kTunerInterfaceVersion);
  bool contains(const std::string& name) const;
  std::vector<std::string> names() const;
  // Throws InputError listing the known names when `name` is unknown.
  std::unique_ptr<Tuner> create(const std::string& name, const TunerContext& context) const;

  // Failures of PACKTUNE_REGISTER_TUNER since the last call (a name registered twice). The
  // macro runs while a plugin is being loaded, where an exception cannot escape safely, so
  // it records the failure here and the plugin loader reports it.
  std::vector<std::string> take_registration_errors();
  void add_registration_error(std::string message);

 private:
  std::map<std::string, Factory> factories_;
  std::vector<std::string> registration_errors_;
};

struct TunerRegistration {
  TunerRegistration(const std::string& name, TunerRegistry::Factory factory,
                    int interface_version = kTunerInterfaceVersion) noexcept {
    try {
      TunerRegistry::instance().add(name, std::move(factory), interface_version);
    } catch (const std::exception& e) {
      TunerRegistry::instance().add_registration_error(e.what());
    }
  }
};

}  // namespace packtune::tuners

#define PACKTUNE_TUNER_CONCAT_INNER(a, b) a##b
#define PACKTUNE_TUNER_CONCAT(a, b) PACKTUNE_TUNER_CONCAT_INNER(a, b)
#define PACKTUNE_REGISTER_TUNER(Class, name)                                               \
  static ::packtune::tuners::TunerRegistration PACKTUNE_TUNER_CONCAT(packtune_tuner_, __LINE__)( \
      name, [](const ::packtune::tuners::TunerContext& context) {                          \
        return std::unique_ptr<::packtune::tuners::Tuner>(new Class(context));             \
      });
