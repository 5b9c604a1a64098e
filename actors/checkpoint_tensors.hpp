#pragma once
// Tensors <-> a checkpoint's stored tensors. Saving copies each tensor once, straight into
// host memory the HDF5 writer reads from; that copy is all a save costs the training loop.
#include <string>

#include <torch/torch.h>

#include "actors/checkpoint_file.hpp"
#include "layers/layer.hpp"

namespace packtune::actors {

// A host copy of `tensor` (float32 or int64; other types are converted to float32).
StoredTensor to_stored(std::string name, const torch::Tensor& tensor);

// The stored tensor on `device`.
torch::Tensor to_tensor(const StoredTensor& stored, torch::Device device);

// The checkpoint's tensor `name` (a model tensor, or "<param>/<slot>" of the optimizer) as a
// tensor shaped like `like` on its device. Throws InputError when it is missing or shaped
// otherwise: the checkpoint was written for another architecture.
torch::Tensor restore_tensor(const TrialCheckpoint& checkpoint, const std::string& name,
                             const torch::Tensor& like, bool optimizer_state = false);

// Copies the checkpoint's parameters and buffers into `model` (a plain LibTorch module, or a
// layer-library model of one member), checking every name and shape.
void load_model_state(torch::nn::Module& model, const TrialCheckpoint& checkpoint);
void load_member_state(layers::Layer& model, const TrialCheckpoint& checkpoint);

}  // namespace packtune::actors
