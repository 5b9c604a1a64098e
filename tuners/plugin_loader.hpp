#pragma once
// Tuner plugins: shared libraries that register tuners with PACKTUNE_REGISTER_TUNER when they
// are loaded. A plugin stays loaded for the life of the process, because the registry holds
// factories that point into its code.
#include <string>
#include <vector>

namespace packtune::tuners {

// Loads the plugin at `path` and returns the names of the tuners it registered. Loading the
// same file again returns the same names. Throws InputError when the file is missing, cannot
// be loaded (with the loader's reason), registers a name that is already taken, or registers
// no tuner at all.
std::vector<std::string> load_tuner_plugin(const std::string& path);

}  // namespace packtune::tuners
