#pragma once
// The "resnet" family's model: a CIFAR-style ResNet of basic blocks, written once with the
// fusable layer library, so that K trials of one fusion key train as one model (append()).
#include <memory>

#include "actors/classifier.hpp"
#include "layers/layer.hpp"

namespace packtune::actors {

// A 3x3 stem convolution (+ batch norm) and its activation; `stages` stages of `blocks` basic
// blocks (conv3x3, batch norm, activation, conv3x3, batch norm, a residual add, activation),
// whose first block in every stage after the first halves the image (stride 2) and projects
// the shortcut with a 1x1 convolution (+ batch norm); adaptive average pooling to 1x1,
// flattening, dropout when spec.dropout > 0 and a linear classifier. Stage s has
// spec.channels << s channels. Convolutions carry a bias only without batch norm.
// model_shape() counts this model; its state-dict names are those of the same network in
// torch::nn modules (a Sequential whose residual blocks hold "body" and "shortcut").
std::shared_ptr<layers::Layer> build_resnet(const spec::ModelSpec& spec, const spec::InputShape& input);

}  // namespace packtune::actors
