// A plugin whose tuner takes a built-in's name: loading it must fail with a clear error, not
// crash inside the dynamic loader.
#include "tuners/schedulers/random_tuner.hpp"
#include "tuners/tuner_registry.hpp"

PACKTUNE_REGISTER_TUNER(packtune::tuners::RandomTuner, "random")
