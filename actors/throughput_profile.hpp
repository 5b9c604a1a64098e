#pragma once
// The calibration step of the throughput model (packing/throughput_model.hpp): times
// training steps of one trial shape alone (a plain model) and as K = 2, 4, 8, ... fused
// members, until one more doubling adds less than `min_gain` of throughput, memory runs out
// or `max_members` is reached. One K per advance(), so an actor profiles between the rounds
// of the pack it trains instead of stalling it.
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <torch/torch.h>

#include "actors/classifier.hpp"
#include "actors/trial_spec.hpp"
#include "datasets/batch_stream.hpp"

namespace packtune::actors {

class ThroughputProfiler {
 public:
  ThroughputProfiler(TrialSpec spec, int max_members, const InputShape& input, torch::Device device,
                     double min_gain = 0.05);

  // Times the next K. Returns false once the profile is complete (then points() holds it).
  bool advance();
  bool done() const { return done_; }
  // Seconds of one training step for each measured K, ascending.
  const std::vector<std::pair<int, double>>& points() const { return points_; }
  // Why the profile ended without any point, or "".
  const std::string& error() const { return error_; }

 private:
  double time_steps(int members);

  TrialSpec spec_;
  int max_members_;
  InputShape input_;
  torch::Device device_;
  double min_gain_;
  std::unique_ptr<datasets::BatchStream> stream_;
  int next_ = 1;
  bool done_ = false;
  std::vector<std::pair<int, double>> points_;
  std::string error_;
};

}  // namespace packtune::actors
