#include "actors/torchscript_file.hpp"

#include <filesystem>
#include <map>
#include <mutex>
#include <regex>
#include <sstream>
#include <utility>

#include <caffe2/serialize/versions.h>
#include <torch/version.h>

#include "packtune/error.hpp"
#include "spec/trial_spec.hpp"

namespace packtune::actors {
namespace {

// Examples in the batch the check runs: two, so that batch norm in training mode has a spread.
constexpr std::int64_t kCheckBatch = 2;

// LibTorch's message as one line: the first, without its "[enforce fail at FILE:LINE] ."
// prefix; for an error inside TorchScript code, the error itself (the traceback's last line) and
// where in the module's original code it was raised.
std::string torch_line(const std::exception& e) {
  const auto* c10_error = dynamic_cast<const c10::Error*>(&e);
  std::string text = c10_error ? c10_error->what_without_backtrace() : e.what();
  if (text.rfind("The following operation failed in the TorchScript interpreter", 0) == 0) {
    std::string last, line;
    std::istringstream lines(text);
    while (std::getline(lines, line)) {
      if (line.find_first_not_of(" \t") != std::string::npos) last = line;
    }
    static const std::regex origin(R"re(File "([^"]+)", line (\d+), in (\w+))re");
    std::string at;
    for (auto it = std::sregex_iterator(text.begin(), text.end(), origin); it != std::sregex_iterator(); ++it) {
      at = " (" + (*it)[1].str() + ", line " + (*it)[2].str() + ", in " + (*it)[3].str() + ")";
    }
    return last + at;
  }
  text = text.substr(0, text.find('\n'));
  static const std::regex enforce(R"(^\[enforce fail at [^\]]*\]\s*\.?\s*)");
  return std::regex_replace(text, enforce, "");
}

// Why torch::jit::load refused the file, in the words its author can act on.
std::string load_failure(const std::exception& e) {
  const auto text = torch_line(e);
  std::smatch match;
  static const std::regex newer(R"(PyTorch file with version (\d+), but the maximum supported version for reading is (\d+))");
  if (std::regex_search(text, match, newer)) {
    return "saved by a newer PyTorch: its TorchScript file format is version " + match[1].str() + ", and " +
           torchscript_reader_version() +
           " reads no later one; save it with the PyTorch of packtune's LibTorch, or build packtune against a newer "
           "LibTorch";
  }
  if (text.find("Unknown builtin op") != std::string::npos || text.find("Unknown type name") != std::string::npos) {
    return "it uses what " + torchscript_reader_version() + " does not know (" + text +
           "): saved by a newer PyTorch? Save it with the PyTorch of packtune's LibTorch";
  }
  if (text.find("failed reading zip archive") != std::string::npos) {
    return "not a TorchScript file (not even a zip archive); write one with torch.jit.script(model).save(PATH)";
  }
  if (text.find("failed locating file constants.pkl") != std::string::npos ||
      text.find("failed locating file code/") != std::string::npos) {
    return "not a TorchScript file: a zip archive without TorchScript code (torch.save of a model or a state "
           "dict?); write one with torch.jit.script(model).save(PATH)";
  }
  return "cannot be loaded as TorchScript: " + text;
}

std::string torch_sizes_text(at::IntArrayRef sizes) {
  std::ostringstream text;
  text << sizes;
  return text.str();
}

// Loaded modules by path and device, checked: each trial deep-copies one.
struct LoadedModules {
  std::mutex mutex;
  std::map<std::pair<std::string, std::string>, torch::jit::Module> modules;
};

LoadedModules& loaded_modules() {
  static LoadedModules loaded;
  return loaded;
}

// The type of the module's plain attribute at `at` ("model.rate": the attribute "rate").
c10::TypePtr attribute_type(const torch::jit::Module& module, const std::string& path, const std::string& at) {
  const auto name = at.substr(at.find('.') + 1);
  const auto type = module.type();
  const std::string of = " of the module at " + path;
  if (type->hasConstant(name)) {
    throw InputError(at + ": a constant" + of + " (Final, or in __constants__), which its code has inlined; make it a "
                     "plain attribute to set it per trial");
  }
  const auto slot = type->findAttributeSlot(name);
  if (slot && (type->is_parameter(*slot) || type->is_buffer(*slot) || type->getAttribute(*slot)->is_module())) {
    throw InputError(at + ": a parameter, buffer or submodule" + of + "; packtune sets only plain attributes");
  }
  if (!slot || name == "training") {
    std::string plain;
    for (std::size_t i = 0; i < type->numAttributes(); ++i) {
      const auto& attribute = type->getAttributeName(i);
      if (type->is_parameter(i) || type->is_buffer(i) || type->getAttribute(i)->is_module() ||
          attribute == "training" || attribute.rfind('_', 0) == 0) {
        continue;
      }
      plain += (plain.empty() ? "" : ", ") + attribute;
    }
    throw InputError(at + ": neither a training key of model family torchscript nor an attribute" + of +
                     " (its attributes: " + (plain.empty() ? std::string("none") : plain) + ")");
  }
  return type->getAttribute(*slot);
}

// Whether an attribute of `type` takes a value of `kind`: a float any number, an int an integer.
bool takes(const c10::TypePtr& type, const std::string& kind) {
  switch (type->kind()) {
    case c10::TypeKind::FloatType: return kind == "real" || kind == "integer";
    case c10::TypeKind::IntType: return kind == "integer";
    case c10::TypeKind::BoolType: return kind == "bool";
    case c10::TypeKind::StringType: return kind == "string";
    default: return false;
  }
}

void check_takes(const c10::TypePtr& type, const std::string& kind, const std::string& path, const std::string& at) {
  if (!takes(type, kind)) {
    throw InputError(at + ": the module at " + path + " holds a " + type->repr_str() + " there, which takes no " + kind +
                     " value");
  }
}

}  // namespace

void check_torchscript_attributes(const torch::jit::Module& module, const std::string& path,
                                  const std::vector<AttributeKind>& attributes) {
  for (const auto& a : attributes) check_takes(attribute_type(module, path, a.at), a.kind, path, a.at);
}

void set_torchscript_attributes(torch::jit::Module& module, const std::string& path,
                                const tuners::TrialConfig& values) {
  for (const auto& [name, value] : values) {
    const auto at = "model." + name;
    const auto type = attribute_type(module, path, at);
    check_takes(type, spec::attribute_kind(value), path, at);
    if (type->kind() == c10::TypeKind::FloatType) {
      module.setattr(name, tuners::as_number(value, at));
    } else if (const auto* i = std::get_if<std::int64_t>(&value)) {
      module.setattr(name, *i);
    } else if (const auto* b = std::get_if<bool>(&value)) {
      module.setattr(name, *b);
    } else {
      module.setattr(name, std::get<std::string>(value));
    }
  }
}

std::string torchscript_reader_version() {
  return std::string("LibTorch ") + TORCH_VERSION + " (TorchScript file format versions up to " +
         std::to_string(caffe2::serialize::kMaxSupportedFileFormatVersion) + ")";
}

void check_torchscript(const torch::jit::Module& module, const std::string& path, const spec::InputShape& input,
                       const std::string& at) {
  const std::string where = at + ": " + path;
  if (!module.find_method("forward")) {
    throw InputError(where + ": the module has no forward method; packtune calls forward(batch)");
  }
  std::int64_t parameters = 0;
  for (const auto& p : module.named_parameters(/*recurse=*/true)) {
    if (p.value.scalar_type() != torch::kFloat32) {
      throw InputError(where + ": parameter " + p.name + " is " + std::string(c10::toString(p.value.scalar_type())) +
                       "; packtune trains float32 parameters (save the model after .float())");
    }
    ++parameters;
  }
  if (parameters == 0) throw InputError(where + ": the module has no parameters to train");
  // On a copy, in training mode, with gradients: the forward and backward a step runs, leaving
  // the module's buffers (batch-norm statistics) as they were saved.
  // Gradients on whatever the caller's mode (a group adds members under no_grad).
  torch::AutoGradMode with_gradients(true);
  auto copy = module.deepcopy();
  copy.train(true);
  std::vector<std::int64_t> batch{kCheckBatch};
  if (input.images) {
    batch.insert(batch.end(), {input.channels, input.height, input.width});
  } else {
    batch.push_back(std::int64_t{input.channels} * input.height * input.width);
  }
  const auto device = (*copy.parameters().begin()).device();
  const auto x = torch::zeros(batch, torch::TensorOptions().device(device));
  torch::jit::IValue out;
  try {
    out = copy.forward({x});
  } catch (const std::exception& e) {
    throw InputError(where + ": its forward fails on a batch of shape " + torch_sizes_text(batch) + ": " + torch_line(e));
  }
  if (!out.isTensor()) {
    throw InputError(where + ": its forward returns " + out.tagKind() + ", not a tensor of " +
                     std::to_string(input.outputs) + " outputs per example");
  }
  const auto y = out.toTensor();
  const std::vector<std::int64_t> needed{kCheckBatch, input.outputs};
  if (!y.sizes().equals(needed)) {
    const char* what = input.task == datasets::Task::Regression ? " regression targets" : " classes";
    throw InputError(where + ": its forward returns " + torch_sizes_text(y.sizes()) + " for a batch of shape " +
                     torch_sizes_text(batch) + ", but the data needs " + torch_sizes_text(needed) + " (" +
                     std::to_string(input.outputs) + what + " per example)");
  }
  if (y.scalar_type() != torch::kFloat32) {
    throw InputError(where + ": its forward returns " + std::string(c10::toString(y.scalar_type())) +
                     " outputs; packtune's losses take float32");
  }
  if (!y.requires_grad()) {
    throw InputError(where + ": its output does not depend on its parameters: nothing would train");
  }
  try {
    y.sum().backward();
  } catch (const std::exception& e) {
    throw InputError(where + ": its backward fails on a batch of shape " + torch_sizes_text(batch) + ": " + torch_line(e));
  }
}

torch::jit::Module load_torchscript(const std::string& path, const spec::InputShape& input, torch::Device device,
                                    const std::string& at) {
  auto& loaded = loaded_modules();
  const auto key = std::make_pair(path, device.str());
  {
    std::lock_guard<std::mutex> lock(loaded.mutex);
    if (auto it = loaded.modules.find(key); it != loaded.modules.end()) return it->second.deepcopy();
  }
  const std::string where = at + ": " + path;
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) throw InputError(where + ": no such file");
  if (!std::filesystem::is_regular_file(path, ec)) throw InputError(where + ": not a file");
  torch::jit::Module module;
  try {
    module = torch::jit::load(path, device);
  } catch (const std::exception& e) {
    throw InputError(where + ": " + load_failure(e));
  }
  check_torchscript(module, path, input, at);
  std::lock_guard<std::mutex> lock(loaded.mutex);
  loaded.modules.emplace(key, module);
  return module.deepcopy();
}

}  // namespace packtune::actors
