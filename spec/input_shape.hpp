#pragma once
// The data a trial's model is built for, as the model sees it: images [C, H, W], or feature
// rows of D as 1 x 1 x D (the layout model plugins see too), and the model's outputs per
// sample (the classes, or the regression targets). Plain C++: the actor builds models for it,
// and the driver and the planner size them from it (experiment/trial_shape.hpp). The default
// is Fashion-MNIST's: 1 x 28 x 28, 10 classes.
#include "datasets/dataset.hpp"

namespace packtune::spec {

struct InputShape {
  int channels = 1;
  int height = 28;
  int width = 28;
  int outputs = 10;
  bool images = true;
  datasets::Task task = datasets::Task::Classification;  // the loss: cross-entropy, or squared error
  // Each member of a pack reads a batch of its own (data.order or augment per_trial), so a
  // unit holds one per member (packing::TrialShape::own_batch_values).
  bool own_batches = false;
};

}  // namespace packtune::spec
