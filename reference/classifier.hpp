#pragma once
// The built-in MLP and CNN written with LibTorch's own modules, as plain torch::nn::Sequential:
// the reference that tests check packtune's layer-library models against, and the "plain
// LibTorch" baseline of the benchmarks. The actor never trains these.
#include <torch/torch.h>

#include "actors/classifier.hpp"
#include "actors/trial_spec.hpp"

namespace packtune::reference {

// Child names ("1.weight", ...) equal those of actors::build_model's model for the same spec.
torch::nn::Sequential build_classifier(const actors::ModelSpec& spec, const actors::InputShape& input);

}  // namespace packtune::reference
