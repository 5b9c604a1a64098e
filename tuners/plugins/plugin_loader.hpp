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

// Checks that `path` names a regular file before a plugin loader dlopens it: InputError
// "`where`: no such file; expected `expected`" when nothing is there, and "not a regular file
// (a folder)" for a folder, a device (/dev/zero) or a FIFO, which dlopen would fail on or
// block in. The model plugin loader (layers/model_plugin_loader.cpp) checks its path so too.
void check_plugin_file(const std::string& where, const std::string& path, const std::string& expected);

}  // namespace packtune::tuners
