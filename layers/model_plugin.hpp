#pragma once
// The model plugin interface: a shared library that registers model families (a declaration
// and a builder written with the layer library) when packtune loads it with --model-plugin.
//
//   #include "layers/model_plugin.hpp"
//   PACKTUNE_MODEL_PLUGIN(registry) {
//     registry.add({declaration, builder});
//   }
//
// The macro defines the two C functions the loader looks up (layers/model_plugin_loader.hpp):
// the interface version the plugin was compiled against, checked before any of its code runs
// through layer types whose layout may have changed, and the registration.
#include "layers/model_registry.hpp"

// Raised whenever the layer library's types or the registry change in a way a compiled plugin
// would misread.
#define PACKTUNE_MODEL_PLUGIN_VERSION 1

#define PACKTUNE_MODEL_PLUGIN_EXPORT extern "C" __attribute__((visibility("default")))

#define PACKTUNE_MODEL_PLUGIN(registry)                                                             \
  PACKTUNE_MODEL_PLUGIN_EXPORT int packtune_model_plugin_version() { return PACKTUNE_MODEL_PLUGIN_VERSION; } \
  PACKTUNE_MODEL_PLUGIN_EXPORT void packtune_register_models(::packtune::layers::ModelRegistry& registry)
