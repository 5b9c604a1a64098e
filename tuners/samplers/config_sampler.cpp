#include "tuners/samplers/config_sampler.hpp"

#include "packtune/error.hpp"
#include "tuners/samplers/tpe_sampler.hpp"
#include "tuners/tuner_settings.hpp"

namespace packtune::tuners {
namespace {

// The keys only TPE reads: the random sampler refuses them, so that a config that forgot
// "sampler": "tpe" is not silently tuned at random.
constexpr const char* kTpeKeys[] = {"startup_trials", "gamma", "candidates", "multivariate", "multi_fidelity",
                                    "constant_liar"};

}  // namespace

std::unique_ptr<ConfigSampler> make_sampler(const TunerContext& context, TunerSettings& settings) {
  const auto sampler = settings.choice("sampler", "random", {"random", "tpe"});
  if (sampler == "random") {
    for (const char* key : kTpeKeys) {
      if (settings.has(key)) {
        throw InputError(std::string("tuner.") + key + ": only the tpe sampler takes it; add \"sampler\": \"tpe\"");
      }
    }
    return std::make_unique<RandomSampler>(context.space, context.seed);
  }
  TpeOptions options;
  options.startup_trials = settings.integer("startup_trials", options.startup_trials, 1, 1000000);
  options.gamma = settings.number("gamma", options.gamma, 0.0);
  if (!(options.gamma > 0 && options.gamma <= 1)) {
    throw InputError("tuner.gamma: expected the good set's share, above 0 and at most 1, got " +
                     number_text(options.gamma));
  }
  options.candidates = settings.integer("candidates", options.candidates, 1, 100000);
  options.multivariate = settings.boolean("multivariate", options.multivariate);
  options.multi_fidelity = settings.choice("multi_fidelity", "furthest", {"furthest", "highest_budget"}) == "furthest"
                               ? MultiFidelity::Furthest
                               : MultiFidelity::HighestBudget;
  options.constant_liar = settings.boolean("constant_liar", options.constant_liar);
  return std::make_unique<TpeSampler>(context.space, context.mode, context.seed, options);
}

}  // namespace packtune::tuners
