#pragma once
// A TorchScript file (torch.jit.script(model).save("net.pt") in Python) read for training: loaded
// once per path and device in this process, and checked against the data before any trial
// trains it. Loading a .pt file runs the TorchScript code it holds, as a model plugin's library
// runs its code (docs/security.md). Every refusal is an InputError of one line that names the
// file: a missing file, one that is no TorchScript archive (a pickled model or state dict), one
// saved by a newer PyTorch than this LibTorch reads (both versions said), a module without
// forward or without float32 parameters, and a forward that throws on a batch of the data's
// shape or returns anything but float32 [B, outputs] that depends on the parameters.
#include <string>
#include <vector>

#include <torch/script.h>

#include "spec/input_shape.hpp"
#include "tuners/trial_config.hpp"

namespace packtune::actors {

// The module at `path` on `device`, its parameters and buffers its own (a deep copy of the one
// loaded), checked against `input` the first time this process loads the path. `at` names the
// path in errors ("model.path").
torch::jit::Module load_torchscript(const std::string& path, const spec::InputShape& input, torch::Device device,
                                    const std::string& at = "model.path");

// The checks load_torchscript makes, on a module loaded from `path` (named in the errors): a
// forward in training mode on a batch of two examples of zeros, and its backward, on a copy.
void check_torchscript(const torch::jit::Module& module, const std::string& path, const spec::InputShape& input,
                       const std::string& at = "model.path");

// The attributes a trial sets on its module before it trains, by the kind of value the config
// gives (spec::attribute_kind: "real", "integer", "bool" or "string"), under their names in the
// config ("model.rate", "space.rate"): each must be a plain attribute of the module (not a
// parameter, buffer, submodule or constant) of a type that takes the value. Throws InputError,
// one line naming the key and the file.
struct AttributeKind {
  std::string at;    // "model.rate"
  std::string kind;  // "real"
};
void check_torchscript_attributes(const torch::jit::Module& module, const std::string& path,
                                  const std::vector<AttributeKind>& attributes);
// Sets each of `values` (a trial's attributes: spec::torchscript_attributes), checked so.
void set_torchscript_attributes(torch::jit::Module& module, const std::string& path,
                                const tuners::TrialConfig& values);

// "LibTorch 1.13.0 (TorchScript file format versions up to 10)": what reads .pt files here.
std::string torchscript_reader_version();

}  // namespace packtune::actors
