#pragma once
// Which finished trials keep their final model (the checkpoint at the max budget) for the test
// at the end (docs/checkpoints.md, Final models): the best few by their last metric, in the
// tuners' rank order. A sweep of 100,000 trials must not fill the disk with final models nobody
// will test. No store here: DriverCore drops the checkpoints this lets go.
#include <cstddef>
#include <optional>
#include <utility>
#include <vector>

#include "tuners/tuner.hpp"

namespace packtune {

class FinalModels {
 public:
  FinalModels(std::size_t keep, tuners::Mode mode) : keep_(keep), mode_(mode) {}

  // `trial` finished at the max budget with `metric`. Returns the trial whose final model is no
  // longer among the best `keep` (it may be `trial` itself), if one fell out.
  std::optional<tuners::TrialId> finished(tuners::TrialId trial, double metric);
  // The trials keeping their final models, best first.
  std::vector<tuners::TrialId> kept() const;

 private:
  std::size_t keep_;
  tuners::Mode mode_;
  std::vector<std::pair<double, tuners::TrialId>> best_;  // (metric, trial), best first
};

}  // namespace packtune
