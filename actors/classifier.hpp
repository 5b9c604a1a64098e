#pragma once
// The image classifiers a trial trains, built from a ModelSpec: an MLP and a small CNN.
#include <torch/torch.h>

#include "actors/trial_spec.hpp"

namespace packtune::actors {

struct InputShape {
  int channels = 1;
  int height = 28;
  int width = 28;
  int classes = 10;
};

// A plain Sequential: layer names ("body.0.weight", ...) are the state-dict names that
// checkpoints use, so they must stay stable.
torch::nn::Sequential build_classifier(const ModelSpec& spec, const InputShape& input);

}  // namespace packtune::actors
