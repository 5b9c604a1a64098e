#include "tuners/plugins/plugin_loader.hpp"

#include <dlfcn.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <system_error>

#include "packtune/error.hpp"
#include "tuners/tuner_registry.hpp"

namespace packtune::tuners {

void check_plugin_file(const std::string& where, const std::string& path, const std::string& expected) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const auto status = path.empty() ? fs::file_status(fs::file_type::not_found) : fs::status(path, ec);
  if (status.type() == fs::file_type::regular) return;
  if (status.type() == fs::file_type::not_found) throw InputError(where + ": no such file; expected " + expected);
  if (ec) throw InputError(where + ": cannot be read (" + ec.message() + "); expected " + expected);
  const char* kind = "";
  switch (status.type()) {
    case fs::file_type::directory: kind = " (a folder)"; break;
    case fs::file_type::character: kind = " (a character device)"; break;
    case fs::file_type::block: kind = " (a block device)"; break;
    case fs::file_type::fifo: kind = " (a FIFO)"; break;
    case fs::file_type::socket: kind = " (a socket)"; break;
    default: break;
  }
  throw InputError(where + ": not a regular file" + std::string(kind) + "; expected " + expected);
}

std::vector<std::string> load_tuner_plugin(const std::string& path) {
  namespace fs = std::filesystem;
  const std::string where = "tuner plugin " + path;
  check_plugin_file(where, path, "the path of a shared library (.so) built against packtune::tuners");
  std::error_code ec;
  // dlopen searches the library path for a bare name; an absolute path makes "tuner.so" mean
  // the file in the current folder, as a user expects.
  const std::string absolute = fs::canonical(path, ec).string();

  static std::map<std::string, std::vector<std::string>> loaded;
  if (auto it = loaded.find(absolute); it != loaded.end()) return it->second;

  auto& registry = TunerRegistry::instance();
  registry.take_registration_errors();
  const auto before = registry.names();
  void* handle = dlopen(absolute.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* text = dlerror();
    const std::string reason = text ? text : "unknown reason";
    // A plugin built before the registry took an interface version calls a function this
    // packtune no longer has.
    const bool stale = reason.find("undefined symbol") != std::string::npos &&
                       reason.find("TunerRegistry") != std::string::npos;
    throw InputError(where + ": cannot be loaded: " + reason +
                     (stale ? "; it was built against another packtune: rebuild it against this one's headers" : ""));
  }
  const auto errors = registry.take_registration_errors();
  if (!errors.empty()) throw InputError(where + ": " + errors.front());

  std::vector<std::string> added;
  for (const auto& name : registry.names()) {
    if (!std::binary_search(before.begin(), before.end(), name)) added.push_back(name);
  }
  if (added.empty()) {
    dlclose(handle);
    throw InputError(where + ": registers no tuner; expected PACKTUNE_REGISTER_TUNER(Class, "
                     "\"name\") in one of its source files");
  }
  loaded[absolute] = added;
  return added;
}

}  // namespace packtune::tuners
