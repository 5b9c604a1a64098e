#include "actors/checkpoint_tensors.hpp"

#include <sstream>

#include "packtune/error.hpp"

namespace packtune::actors {
namespace {

std::string shape_text(at::IntArrayRef shape) {
  std::ostringstream s;
  s << "[";
  for (std::size_t i = 0; i < shape.size(); ++i) s << (i ? ", " : "") << shape[i];
  s << "]";
  return s.str();
}

}  // namespace

StoredTensor to_stored(std::string name, const torch::Tensor& tensor) {
  StoredTensor s;
  s.name = std::move(name);
  s.type = tensor.scalar_type() == torch::kInt64 ? TensorType::Int64 : TensorType::Float32;
  s.shape.assign(tensor.sizes().begin(), tensor.sizes().end());
  s.bytes = TensorBytes(static_cast<std::size_t>(tensor.numel()) * element_size(s.type));
  if (tensor.numel() > 0) {
    const auto dtype = s.type == TensorType::Int64 ? torch::kInt64 : torch::kFloat32;
    // One copy, from wherever the tensor lives, into memory the writer owns.
    torch::from_blob(s.bytes.data(), tensor.sizes(), torch::TensorOptions().dtype(dtype))
        .copy_(tensor.detach());
  }
  return s;
}

torch::Tensor to_tensor(const StoredTensor& stored, torch::Device device) {
  const auto dtype = stored.type == TensorType::Int64 ? torch::kInt64 : torch::kFloat32;
  auto host = torch::from_blob(const_cast<unsigned char*>(stored.bytes.data()), stored.shape,
                               torch::TensorOptions().dtype(dtype));
  return host.to(device, /*non_blocking=*/false, /*copy=*/true);
}

torch::Tensor restore_tensor(const TrialCheckpoint& checkpoint, const std::string& name,
                             const torch::Tensor& like, bool optimizer_state) {
  const StoredTensor* stored = nullptr;
  std::string path;
  if (optimizer_state) {
    const auto slash = name.find('/');
    stored = checkpoint.find_optimizer(name.substr(0, slash), name.substr(slash + 1));
    path = "/optimizer/" + name;
  } else {
    stored = checkpoint.find_model(name);
    path = "/model/" + name;
  }
  const auto where = "checkpoint of trial " + std::to_string(checkpoint.trial) + ": ";
  if (!stored) throw InputError(where + "no tensor " + path + "; it was written for another architecture");
  if (!like.sizes().equals(stored->shape)) {
    throw InputError(where + path + " is " + shape_text(stored->shape) + " but this model needs " +
                     shape_text(like.sizes()) + "; it was written for another architecture");
  }
  return to_tensor(*stored, like.device()).to(like.scalar_type());
}

namespace {

void load_named(const std::vector<std::pair<std::string, torch::Tensor>>& targets, const TrialCheckpoint& checkpoint) {
  torch::NoGradGuard no_grad;
  for (const auto& [name, tensor] : targets) {
    auto target = tensor;
    target.copy_(restore_tensor(checkpoint, name, tensor));
  }
  if (checkpoint.model.size() != targets.size()) {
    throw InputError("checkpoint of trial " + std::to_string(checkpoint.trial) + ": holds " +
                     std::to_string(checkpoint.model.size()) + " model tensors but this model has " +
                     std::to_string(targets.size()) + "; it was written for another architecture");
  }
}

}  // namespace

void load_model_state(torch::nn::Module& model, const TrialCheckpoint& checkpoint) {
  std::vector<std::pair<std::string, torch::Tensor>> targets;
  for (auto& p : model.named_parameters()) targets.emplace_back(p.key(), p.value());
  for (auto& b : model.named_buffers()) targets.emplace_back(b.key(), b.value());
  load_named(targets, checkpoint);
}

void load_member_state(layers::Layer& model, const TrialCheckpoint& checkpoint) {
  load_named(model.member_tensors(0), checkpoint);
}

}  // namespace packtune::actors
