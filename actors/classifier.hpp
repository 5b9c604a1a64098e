#pragma once
// The model a trial trains, built with the layer library (layers/) from its ModelSpec: the
// built-in families (an MLP, a small CNN, a CIFAR-style ResNet) and those of model plugins.
// One builder for every path: a trial alone is the same model as a member of a fused unit.
#include <memory>

#include "datasets/batch_stream.hpp"
#include "layers/layer.hpp"
#include "spec/input_shape.hpp"
#include "spec/trial_spec.hpp"

namespace packtune::actors {

// Throws InputError unless the input is images: for families that convolve.
void require_images(const spec::ModelSpec& spec, const spec::InputShape& input);

// The shape of the data a stream serves.
spec::InputShape input_shape(const datasets::BatchStream& stream);

// One trial's model (K = 1), initialised from the global generator. Layer names ("1.weight",
// ...) are the state-dict names checkpoints use, so they must stay stable. Throws InputError
// for a family no one registered or a shape the family cannot build.
std::shared_ptr<layers::Layer> build_model(const spec::ModelSpec& spec, const spec::InputShape& input);

}  // namespace packtune::actors
