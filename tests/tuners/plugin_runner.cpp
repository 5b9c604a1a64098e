// Loads a tuner plugin built out of tree (custom_tuner_test.sh) and simulates its tuner: the
// proof that an installed packtune is enough to write, build and run a tuner.
//   plugin_runner PLUGIN.so TUNER_NAME
#include <iostream>

#include "packtune/error.hpp"
#include "tuners/plugins/plugin_loader.hpp"
#include "tuners/simulate/simulator.hpp"
#include "tuners/simulate/synthetic_objective.hpp"
#include "tuners/tuner_registry.hpp"

int main(int argc, char** argv) {
  using namespace packtune::tuners;
  if (argc != 3) {
    std::cerr << "usage: plugin_runner PLUGIN.so TUNER_NAME\n";
    return 2;
  }
  try {
    const auto names = load_tuner_plugin(argv[1]);
    std::cout << "loaded " << argv[1] << ":";
    for (const auto& n : names) std::cout << " " << n;
    std::cout << "\n";
    TunerContext context;
    context.space = SearchSpace::from_json(
        nlohmann::json::parse(R"({"lr": {"type": "loguniform", "low": 1e-4, "high": 1e-1}})"));
    context.mode = Mode::Min;
    context.min_budget = 1;
    context.max_budget = 27;
    context.max_trials = 40;
    context.seed = 5;
    auto tuner = TunerRegistry::instance().create(argv[2], context);
    SyntheticObjective objective(context.space, context.seed, context.mode, context.max_budget);
    Simulator simulator(*tuner, objective, context.mode, SimulationOptions{4, 1});
    const auto summary = simulator.run();
    std::cout << summary.tuner << ": " << summary.trials << " trials, " << summary.stopped
              << " stopped early, best trial " << summary.best_trial << " (" << summary.best_metric
              << " at budget " << summary.best_budget << ")\n";
    if (summary.trials != 40 || summary.stopped == 0 || summary.best_trial < 0) {
      std::cerr << "plugin_runner: expected 40 trials, some stopped early\n";
      return 1;
    }
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "plugin_runner: " << e.what() << "\n";
    return 1;
  }
}
