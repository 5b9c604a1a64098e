// A model plugin without its interface version (written by hand, not with
// PACKTUNE_MODEL_PLUGIN): loading it must fail naming the missing symbol, before any of its
// code runs. Needs no LibTorch: the registry is only passed by reference.
namespace packtune::layers {
class ModelRegistry;
}

extern "C" __attribute__((visibility("default"))) void packtune_register_models(packtune::layers::ModelRegistry&) {}
