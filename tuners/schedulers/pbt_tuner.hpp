#pragma once
// Population-based training (Jaderberg et al. 2017), synchronous: a population of `population`
// trials trains in generations of `interval` budget up to the max budget. When every member
// has reported at the end of a generation, the members are ranked (ranks_before: NaN last,
// ties to the lower id) and each of the bottom k = round(quantile x population) (at least 1,
// at most half) exploits one of the top k drawn at random: it goes on from that member's
// checkpoint, with that member's config (Job::exploit), explored:
//  - each parameter listed in `perturb`, in the space's (name) order, is resampled from the
//    space with probability `resample_probability`, else perturbed: a number multiplied by
//    one of `perturbation_factors` drawn at random and kept inside its range (an integer
//    rounded), a choice moved one step to either side of its list (kept at the ends);
//  - the other parameters are the donor's, unchanged.
// The rest go on from their own checkpoints, after the exploits (so a donor goes on only once
// the members taking its checkpoint have started). A failed member is exploited whatever its
// rank; if every member failed, the run ends. Synchronous rather than as each member reports
// (Ray's default): a population fused into one model reaches each generation's end at once
// anyway, and decisions that never depend on the order results arrive in make the schedule a
// function of the seed and the metrics alone.
#include <cstdint>
#include <deque>
#include <random>
#include <string>
#include <vector>

#include "tuners/tuner.hpp"

namespace packtune::tuners {

struct PbtOptions {
  std::int64_t population = 8;
  double interval = 1;  // budget per generation
  double quantile = 0.25;
  double resample_probability = 0.25;
  std::vector<double> perturbation_factors{0.8, 1.2};
  std::vector<std::string> perturb;  // the parameters explore may change
};

class PbtTuner : public Tuner {
 public:
  // Reads the settings (population, interval: default budget.min, quantile,
  // resample_probability, perturbation_factors, perturb); InputError for a bad one.
  static std::unique_ptr<Tuner> pbt(const TunerContext& context);

  PbtTuner(const TunerContext& context, PbtOptions options);

  Job next_job() override;
  void on_result(TrialId trial, double budget, double metric) override;
  std::string name() const override { return "pbt"; }
  std::optional<double> planned_budget() const override;

  // The members exploited at each generation's end: how many of the bottom take the top's.
  std::size_t exploit_count() const;
  // One explore step of `config`, as the tuner does it, drawing from `rng`.
  TrialConfig explore(const TrialConfig& config, std::mt19937_64& rng) const;

 private:
  double generation_budget(std::int64_t generation) const;
  void end_generation();

  TunerContext context_;
  PbtOptions options_;
  std::mt19937_64 rng_;
  std::vector<TrialConfig> configs_;  // by member: its config in the current generation
  std::vector<double> metrics_;       // by member: its result at the current generation's end
  std::vector<bool> reported_;
  std::int64_t generation_ = 1;  // the generation being trained, from 1
  std::size_t reported_count_ = 0;
  std::deque<Job> queue_;
  bool finished_ = false;
};

}  // namespace packtune::tuners
