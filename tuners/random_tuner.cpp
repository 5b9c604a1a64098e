#include "tuners/random_tuner.hpp"

#include "packtune/error.hpp"
#include "tuners/tuner_settings.hpp"

namespace packtune::tuners {

RandomTuner::RandomTuner(const TunerContext& context)
    : FixedBudgetTuner(context.max_budget), context_(context), rng_(context.seed) {
  check_trials(context_, false);
  check_budgets(context_.min_budget, context_.max_budget);
  if (!context_.settings.empty()) {
    throw InputError("tuner." + context_.settings.begin().key() +
                     ": unknown key for the random tuner; it takes only name and trials");
  }
}

}  // namespace packtune::tuners
