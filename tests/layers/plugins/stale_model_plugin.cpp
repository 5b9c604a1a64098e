// A model plugin built against another model plugin interface, as its version says (0, which
// no packtune takes): loading it must fail, saying to rebuild it, before its registration
// runs against layer types it may misread.
namespace packtune::layers {
class ModelRegistry;
}

extern "C" __attribute__((visibility("default"))) int packtune_model_plugin_version() { return 0; }
extern "C" __attribute__((visibility("default"))) void packtune_register_models(packtune::layers::ModelRegistry&) {}
