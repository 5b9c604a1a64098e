#pragma once
// What pack_bench trains: K members of one architecture that differ only in hyper-parameters,
// in the precision the run asks for, and the training FLOPs a sample of them costs.
#include <string>
#include <vector>

#include "actors/autocast.hpp"
#include "actors/classifier.hpp"
#include "bench/pack_bench/options.hpp"
#include "spec/trial_spec.hpp"

namespace packtune::bench {

// The run's precision on `device`, as an actor sets it; bf16 is allowed on a CPU here (LibTorch's
// CPU autocast), which an actor refuses, so that its cost can be measured there too.
spec::Precision use_precision(const Options& o, const std::string& device);

spec::TrialSpec member_spec(const Options& o, const std::string& model, int member);

// 0 ... k - 1: the members of a pack of K.
std::vector<int> member_ids(int k);

// Backward computes a gradient for the inputs and one for the weights, each as costly as
// the forward product: training ~ 3x the forward FLOPs.
double train_flops_per_sample(const spec::ModelSpec& spec, const spec::InputShape& input);

}  // namespace packtune::bench
