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

// Every tensor the checkpoint holds was loaded: none is left over from another architecture.
void check_count(const TrialCheckpoint& checkpoint, std::size_t loaded) {
  if (checkpoint.model.size() != loaded) {
    throw InputError("checkpoint of trial " + std::to_string(checkpoint.trial) + ": holds " +
                     std::to_string(checkpoint.model.size()) + " model tensors but this model has " +
                     std::to_string(loaded) + "; it was written for another architecture");
  }
}

}  // namespace

void load_model_state(torch::nn::Module& model, const TrialCheckpoint& checkpoint) {
  torch::NoGradGuard no_grad;
  std::size_t loaded = 0;
  for (auto& p : model.named_parameters()) {
    p.value().copy_(restore_tensor(checkpoint, p.key(), p.value()));
    ++loaded;
  }
  for (auto& b : model.named_buffers()) {
    b.value().copy_(restore_tensor(checkpoint, b.key(), b.value()));
    ++loaded;
  }
  check_count(checkpoint, loaded);
}

void load_member_state(layers::Layer& model, const TrialCheckpoint& checkpoint) {
  // Through the stacked tensors, not member_tensors(): a solo layout may be a copy (attention's
  // packed q, k, v of a padded member), which would take the checkpoint's values and drop them.
  torch::NoGradGuard no_grad;
  std::size_t loaded = 0;
  for (bool buffers : {false, true}) {
    for (const auto& entry : buffers ? model.stacked_buffers() : model.stacked_parameters()) {
      auto row = entry.tensor.detach()[0];
      const auto solo = restore_tensor(checkpoint, entry.name, layers::Layer::solo_view(entry, row, 0));
      layers::own_part(row, entry.own[0]).copy_(layers::Layer::member_layout(entry.layout, solo));
      ++loaded;
    }
  }
  check_count(checkpoint, loaded);
}

}  // namespace packtune::actors
