#pragma once
// A TorchScript module as one trial's model: a layers::Layer of one member, so that the engine
// trains it as it trains any model (FusedGroup: the fused optimizer, schedules, losses,
// checkpoints under state-dict names, resume, the final test). Its tree of
// layers mirrors the module's submodules, each holding its own parameters and buffers as
// stacked [1, ...] tensors under the module's own names ("layer1.0.conv1.weight"), which is
// what a checkpoint holds. Before each forward the module's parameter and buffer slots are
// bound to views of those tensors, so gradients reach them and batch-norm statistics land in
// them, wherever the engine moved or replaced them.
//
// A module does not fuse: append() refuses it. Members of a unit are separate modules that
// share the pack's data stream (packed, not fused); the planner gives each a unit of its own
// (spec::fuses). Dropout inside the module draws from the global generator, which each
// training forward seeds from the member's seed and step (layers::MemberSeeds), so that a run
// repeats, and resumes, bit for bit on a CPU.
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <torch/script.h>

#include "layers/layer.hpp"
#include "spec/input_shape.hpp"
#include "spec/trial_spec.hpp"

namespace packtune::actors {

class TorchScriptModel : public layers::Layer {
 public:
  // Takes `module` (a copy of its own, as load_torchscript returns) and its parameters and
  // buffers as member 0's.
  TorchScriptModel(torch::jit::Module module, std::string path);

  // x: [1, B, ...] -> [1, B, outputs].
  torch::Tensor forward(const torch::Tensor& x) override;
  void train(bool on = true) override;

 protected:
  void check_values(const Layer& other) const override;

 private:
  // A slot of the module (its owner and attribute) and the stacked tensor behind it.
  struct Binding {
    torch::jit::Module owner;
    std::string attribute;
    torch::Tensor stacked;
  };
  // Registers a tensor of the module's on the layer tree: a stacked parameter or buffer.
  using AddTensor = std::function<torch::Tensor(const std::string& name, const torch::Tensor& solo, bool buffer)>;
  // `module`'s own parameters and buffers through `add`, and a layer under `node` for each
  // of its submodules, recursively; every slot is bound.
  void mirror(const torch::jit::Module& module, torch::nn::Module& node, const AddTensor& add);
  void bind();

  torch::jit::Module module_;
  std::string path_;
  std::vector<Binding> bindings_;
};

// A fresh model of a torchscript trial's module on `device` (load_torchscript: checked on first
// load), its attributes set (spec::torchscript_attributes).
std::shared_ptr<layers::Layer> build_torchscript_model(const spec::ModelSpec& spec, const spec::InputShape& input,
                                                       torch::Device device);

}  // namespace packtune::actors
