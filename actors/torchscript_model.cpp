#include "actors/torchscript_model.hpp"

#include <utility>

#include "actors/torchscript_file.hpp"
#include "layers/member_seeds.hpp"
#include "packtune/error.hpp"

namespace packtune::actors {
namespace {

// A submodule of the TorchScript module: its parameters and buffers, and its own submodules,
// under its name, so that their state-dict names are the module's. It runs inside the
// module's forward, never by itself.
class ScriptSubmodule : public layers::Layer {
 public:
  torch::Tensor forward(const torch::Tensor&) override {
    throw Error("a TorchScript submodule runs only inside its module's forward");
  }
  torch::Tensor adopt(const std::string& name, const torch::Tensor& solo, bool buffer) {
    return buffer ? add_stacked_buffer(name, solo) : add_stacked_parameter(name, solo);
  }
};

}  // namespace

TorchScriptModel::TorchScriptModel(torch::jit::Module module, std::string path)
    : module_(std::move(module)), path_(std::move(path)) {
  mirror(module_, *this, [this](const std::string& name, const torch::Tensor& solo, bool buffer) {
    return buffer ? add_stacked_buffer(name, solo) : add_stacked_parameter(name, solo);
  });
  // The module's own tensors are copied into the stacked ones: bound to those, it holds no
  // second copy of its weights.
  torch::NoGradGuard no_grad;
  bind();
}

void TorchScriptModel::mirror(const torch::jit::Module& module, torch::nn::Module& node, const AddTensor& add) {
  for (const auto& p : module.named_parameters(/*recurse=*/false)) {
    bindings_.push_back({module, p.name, add(p.name, p.value, false)});
  }
  for (const auto& b : module.named_buffers(/*recurse=*/false)) {
    bindings_.push_back({module, b.name, add(b.name, b.value, true)});
  }
  for (const auto& child : module.named_children()) {
    auto layer = std::make_shared<ScriptSubmodule>();
    node.register_module(child.name, layer);
    mirror(child.value, *layer, [layer](const std::string& name, const torch::Tensor& solo, bool buffer) {
      return layer->adopt(name, solo, buffer);
    });
  }
}

void TorchScriptModel::bind() {
  // Views taken now: the stacked tensors may have moved (to a device) since the last forward.
  for (auto& b : bindings_) b.owner.setattr(b.attribute, b.stacked.select(0, 0));
}

torch::Tensor TorchScriptModel::forward(const torch::Tensor& x) {
  if (members() != 1) throw Error("TorchScript module " + path_ + ": holds " + std::to_string(members()) + " members");
  bind();
  if (is_training()) {
    if (auto* seeds = layers::MemberSeeds::current()) {
      // One seed per forward: the module's draws follow from the member's seed and step.
      torch::manual_seed(static_cast<std::uint64_t>(seeds->next_draw().reshape({-1})[0].item<std::int64_t>()));
    }
  }
  const auto out = module_.forward({x.select(0, 0)});
  if (!out.isTensor()) throw Error("TorchScript module " + path_ + ": its forward returned " + out.tagKind());
  return out.toTensor().unsqueeze(0);
}

void TorchScriptModel::train(bool on) {
  layers::Layer::train(on);
  module_.train(on);
}

void TorchScriptModel::check_values(const Layer&) const {
  throw Error("TorchScript module " + path_ + ": does not fuse; each of its trials trains as a unit of its own");
}

std::shared_ptr<layers::Layer> build_torchscript_model(const spec::ModelSpec& spec, const spec::InputShape& input,
                                                       torch::Device device) {
  const auto& path = spec::torchscript_path(spec);
  auto module = load_torchscript(path, input, device);
  set_torchscript_attributes(module, path, spec::torchscript_attributes(spec));
  return std::make_shared<TorchScriptModel>(std::move(module), path);
}

}  // namespace packtune::actors
