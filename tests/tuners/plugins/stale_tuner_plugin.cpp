// A plugin built against an older tuner interface, as its registration says: loading it must
// fail with an error saying to rebuild it, before any of its code runs through a vtable this
// packtune does not have.
#include "tuners/schedulers/random_tuner.hpp"
#include "tuners/tuner_registry.hpp"

static const packtune::tuners::TunerRegistration stale_registration(
    "stale_random",
    [](const packtune::tuners::TunerContext& context) {
      return std::unique_ptr<packtune::tuners::Tuner>(new packtune::tuners::RandomTuner(context));
    },
    packtune::tuners::kTunerInterfaceVersion - 1);
