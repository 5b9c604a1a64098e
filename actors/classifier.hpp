#pragma once
// The model a trial trains, built with the layer library (layers/) from its ModelSpec: the
// built-in families (an MLP, a small CNN, a CIFAR-style ResNet) and those of model plugins.
// One builder for every path: a trial alone is the same model as a member of a fused unit.
#include <memory>

#include "actors/trial_spec.hpp"
#include "datasets/batch_stream.hpp"
#include "layers/layer.hpp"

namespace packtune::actors {

// The data a model is built for: images [C, H, W], or feature rows of D as 1 x 1 x D (the
// layout model plugins see too), and the model's outputs per sample: the classes, or the
// regression targets.
struct InputShape {
  int channels = 1;
  int height = 28;
  int width = 28;
  int outputs = 10;
  bool images = true;
  datasets::Task task = datasets::Task::Classification;  // the loss: cross-entropy, or squared error
};

// Throws InputError unless the input is images: for families that convolve.
void require_images(const ModelSpec& spec, const InputShape& input);

// The shape of the data a stream serves.
InputShape input_shape(const datasets::BatchStream& stream);

// One trial's model (K = 1), initialised from the global generator. Layer names ("1.weight",
// ...) are the state-dict names checkpoints use, so they must stay stable. Throws InputError
// for a family no one registered or a shape the family cannot build.
std::shared_ptr<layers::Layer> build_model(const ModelSpec& spec, const InputShape& input);

}  // namespace packtune::actors
