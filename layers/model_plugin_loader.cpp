#include "layers/model_plugin_loader.hpp"

#include <dlfcn.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <mutex>
#include <system_error>

#include "layers/model_plugin.hpp"
#include "packtune/error.hpp"
#include "tuners/plugins/plugin_loader.hpp"

namespace packtune::layers {

std::vector<std::string> load_model_plugin(const std::string& path, const std::vector<std::string>& taken,
                                           const std::function<void(const FamilyDeclaration&)>& check) {
  namespace fs = std::filesystem;
  const std::string where = "model plugin " + path;
  tuners::check_plugin_file(where, path, "the path of a shared library (.so) built against packtune::layers");
  std::error_code ec;
  // dlopen searches the library path for a bare name: "vgg.so" must mean the file here.
  const std::string absolute = fs::canonical(path, ec).string();

  static std::mutex mutex;
  static std::map<std::string, std::vector<std::string>> loaded;
  std::lock_guard<std::mutex> lock(mutex);
  if (auto it = loaded.find(absolute); it != loaded.end()) return it->second;

  void* handle = dlopen(absolute.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* text = dlerror();
    throw InputError(where + ": cannot be loaded: " + (text ? text : "unknown reason"));
  }
  // Unloaded again on any failure: nothing of it stays registered or mapped.
  struct Closer {
    void* handle;
    ~Closer() {
      if (handle) dlclose(handle);
    }
  } closer{handle};
  auto symbol = [&](const char* name) {
    void* found = dlsym(handle, name);
    if (found == nullptr) {
      throw InputError(where + ": exports no " + name + "; a model plugin defines its families in "
                       "PACKTUNE_MODEL_PLUGIN(registry) { ... } (layers/model_plugin.hpp)");
    }
    return found;
  };
  const auto version = reinterpret_cast<int (*)()>(symbol(kModelPluginVersionSymbol))();
  if (version != PACKTUNE_MODEL_PLUGIN_VERSION) {
    throw InputError(where + ": built against model plugin interface version " + std::to_string(version) +
                     ", this packtune takes version " + std::to_string(PACKTUNE_MODEL_PLUGIN_VERSION) +
                     "; rebuild it against this packtune");
  }
  auto register_models = reinterpret_cast<void (*)(ModelRegistry&)>(symbol(kRegisterModelsSymbol));

  // Into a registry of its own first, so that a plugin that fails registers nothing.
  ModelRegistry staged;
  try {
    register_models(staged);
  } catch (const std::exception& e) {
    throw InputError(where + ": " + e.what());
  }
  auto& registry = ModelRegistry::instance();
  const auto added = staged.names();
  if (added.empty()) {
    throw InputError(where + ": registers no model family; expected registry.add(...) in its "
                     "PACKTUNE_MODEL_PLUGIN(registry) { ... }");
  }
  for (const auto& name : added) {
    if (registry.find(name) || std::find(taken.begin(), taken.end(), name) != taken.end()) {
      throw InputError(where + ": registers model family \"" + name +
                       "\", a name packtune or another plugin has taken; rename it");
    }
    if (check) {
      try {
        check(staged.find(name)->declaration);
      } catch (const std::exception& e) {
        throw InputError(where + ": " + e.what());
      }
    }
  }
  for (const auto& name : added) registry.add(*staged.find(name));
  closer.handle = nullptr;
  loaded[absolute] = added;
  return added;
}

}  // namespace packtune::layers
