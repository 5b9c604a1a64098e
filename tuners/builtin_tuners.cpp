// Built-in tuners are registered explicitly rather than by static initialisers, which a
// linker is free to drop from a library when nothing references their object file.
#include "tuners/schedulers/asha_tuner.hpp"
#include "tuners/schedulers/grid_tuner.hpp"
#include "tuners/schedulers/hyperband_tuner.hpp"
#include "tuners/schedulers/pbt_tuner.hpp"
#include "tuners/schedulers/random_tuner.hpp"
#include "tuners/tuner_registry.hpp"

namespace packtune::tuners {

void register_builtin_tuners(TunerRegistry& registry) {
  registry.add("random", [](const TunerContext& c) { return std::make_unique<RandomTuner>(c); });
  registry.add("grid", [](const TunerContext& c) { return std::make_unique<GridTuner>(c); });
  registry.add("sha", &HyperbandTuner::successive_halving);
  registry.add("hyperband", &HyperbandTuner::hyperband);
  registry.add("asha", &AshaTuner::asha);
  registry.add("async_hyperband", &AshaTuner::async_hyperband);
  registry.add("pbt", &PbtTuner::pbt);
}

}  // namespace packtune::tuners
