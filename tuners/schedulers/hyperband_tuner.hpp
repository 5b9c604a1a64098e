#pragma once
// Synchronous successive halving (`sha`) and Hyperband (`hyperband`).
//
// Hyperband runs the brackets s_max ... 0 of brackets.hpp in turn, and starts over at s_max
// while the trial limit allows; the bracket that reaches the limit is cut to the trials left
// (its rungs shrink by the same floor(n/eta) rule). `trials` = 0 runs exactly one sweep. A
// bracket is synchronous, but the next one opens as soon as every open bracket is waiting for
// results, so no worker idles while a rung finishes; with one worker this is exactly the
// sequential algorithm of the paper.
//
// Successive halving is one bracket, s_max, with `trials` configs in its bottom rung (0: the
// formula's eta^s_max).
//
// Settings: "eta" (integer >= 2, default 3).
#include <deque>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "tuners/samplers/config_sampler.hpp"
#include "tuners/schedulers/successive_halving_bracket.hpp"
#include "tuners/tuner.hpp"

namespace packtune::tuners {

class HyperbandTuner : public Tuner {
 public:
  static std::unique_ptr<Tuner> hyperband(const TunerContext& context);
  static std::unique_ptr<Tuner> successive_halving(const TunerContext& context);

  Job next_job() override;
  void on_result(TrialId trial, double budget, double metric) override;
  std::string name() const override { return name_; }
  std::optional<double> planned_budget() const override;
  std::vector<std::string> warnings() const override;

  // The brackets opened so far, oldest first (finished ones included), for tests and reports.
  std::vector<Bracket> opened_brackets() const;

 private:
  // `sweep` is the cycle of bracket plans; `max_trials` 0 runs it once.
  HyperbandTuner(const TunerContext& context, std::string name, std::vector<Bracket> sweep,
                 std::int64_t eta, std::unique_ptr<ConfigSampler> sampler);
  bool open_bracket();
  // The plan of the bracket opened after `opened` brackets holding `planned` trials; nullopt
  // when the sweep or the trial limit is done.
  std::optional<Bracket> plan_after(std::size_t opened, std::int64_t planned) const;
  Job with_config(Job job) const;

  TunerContext context_;
  std::string name_;
  std::vector<Bracket> sweep_;
  std::int64_t eta_;
  std::unique_ptr<ConfigSampler> sampler_;
  std::size_t next_in_sweep_ = 0;
  std::int64_t trials_planned_ = 0;
  std::vector<TrialConfig> configs_;  // by trial id
  // Open brackets by age. A sweep of 100,000 trials opens tens of thousands of brackets
  // while their first rungs train, so neither a job nor a result may scan them all.
  std::map<std::uint64_t, SuccessiveHalvingBracket> open_;
  std::set<std::uint64_t> with_work_;             // open brackets with a job to hand out
  std::map<TrialId, std::uint64_t> by_first_trial_;  // each bracket owns first.. first+n-1
  std::uint64_t next_bracket_ = 0;
  std::vector<Bracket> opened_;
};

}  // namespace packtune::tuners
