// A model plugin that registers no family: an error, since a config could never use it.
#include "layers/model_plugin.hpp"

PACKTUNE_MODEL_PLUGIN(registry) { (void)registry; }
