#pragma once
// The built-in MLP, CNN and ResNet (reference/torch_resnet.hpp) written with LibTorch's own modules,
// as plain torch::nn::Sequential: the reference that tests check packtune's layer-library
// models against, and the "plain LibTorch" baseline of the benchmarks. The actor never trains
// these.
#include <torch/torch.h>

#include "actors/classifier.hpp"
#include "spec/trial_spec.hpp"

namespace packtune::reference {

// Child names ("1.weight", ...) equal those of actors::build_model's model for the same spec.
torch::nn::Sequential build_classifier(const spec::ModelSpec& spec, const spec::InputShape& input);

// Appends the activation `name` (relu, tanh, gelu or sigmoid) as a module; InputError otherwise.
void add_activation(torch::nn::Sequential& seq, const std::string& name);

}  // namespace packtune::reference
