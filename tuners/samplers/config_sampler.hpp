#pragma once
// Where a tuner's new configurations come from. The tuners decide how long each trial trains;
// a sampler decides what it trains: at random (the default), or by TPE from the results so
// far (`"sampler": "tpe"` in the tuner block). A sampler is told every result, so one that
// learns sees what the tuner sees, in the same order; a resumed run replays the journal into
// a fresh tuner and so rebuilds the sampler exactly.
#include <cstdint>
#include <memory>
#include <random>

#include <nlohmann/json.hpp>

#include "tuners/search_space.hpp"
#include "tuners/trial_config.hpp"

namespace packtune::tuners {

struct TunerContext;
class TunerSettings;

// A configuration and why it was chosen: null for a random draw; for TPE, the budget it
// modelled, its good and bad trials and each parameter's density ratio.
struct Suggestion {
  TrialConfig config;
  nlohmann::json why;
};

class ConfigSampler {
 public:
  virtual ~ConfigSampler() = default;
  // The configuration of trial `trial`; trials are suggested in id order.
  virtual Suggestion suggest(TrialId trial) = 0;
  // `trial`, with `config`, reached `budget` with `metric` (NaN: failed or diverged).
  virtual void observe(TrialId trial, const TrialConfig& config, double budget, double metric) = 0;
};

// Independent draws from the space: what every tuner did before samplers existed, draw for
// draw (one engine seeded with the experiment's seed).
class RandomSampler : public ConfigSampler {
 public:
  RandomSampler(SearchSpace space, std::uint64_t seed) : space_(std::move(space)), rng_(seed) {}
  Suggestion suggest(TrialId /*trial*/) override { return {space_.sample(rng_), nullptr}; }
  void observe(TrialId, const TrialConfig&, double, double) override {}

 private:
  SearchSpace space_;
  std::mt19937_64 rng_;
};

// The sampler the tuner block asks for: reads "sampler" (random | tpe) and the TPE keys
// (startup_trials, gamma, candidates, multivariate, multi_fidelity, constant_liar) from
// `settings`; a TPE key without "sampler": "tpe" is an InputError.
std::unique_ptr<ConfigSampler> make_sampler(const TunerContext& context, TunerSettings& settings);

}  // namespace packtune::tuners
