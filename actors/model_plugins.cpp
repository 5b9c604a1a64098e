#include "actors/model_plugins.hpp"

#include <map>
#include <mutex>
#include <sstream>

#include <torch/torch.h>

#include "actors/pack_executor.hpp"
#include "layers/model_plugin_loader.hpp"
#include "packtune/error.hpp"
#include "spec/declared_families.hpp"

namespace packtune::actors {
namespace {

// Which plugin registered each family, for the messages of its failures.
std::map<std::string, std::string>& plugin_paths() {
  static std::map<std::string, std::string> paths;
  return paths;
}
std::mutex plugin_paths_mutex;

std::string family_name(const std::string& family) {
  std::lock_guard<std::mutex> lock(plugin_paths_mutex);
  const auto it = plugin_paths().find(family);
  const std::string plugin = it == plugin_paths().end() ? std::string() : "model plugin " + it->second + ": ";
  return plugin + "model family \"" + family + "\"";
}

// "[1, 1, 10]", as LibTorch prints sizes.
std::string sizes_text(at::IntArrayRef sizes) {
  std::ostringstream text;
  text << sizes;
  return text.str();
}

}  // namespace

std::vector<layers::FamilyDeclaration> load_model_plugin(const std::string& path) {
  const auto names = layers::load_model_plugin(path, spec::builtin_families(), spec::check_declaration);
  std::vector<layers::FamilyDeclaration> families;
  for (const auto& name : names) {
    const auto& declaration = layers::ModelRegistry::instance().find(name)->declaration;
    spec::DeclaredFamilies::instance().add(declaration);
    families.push_back(declaration);
    std::lock_guard<std::mutex> lock(plugin_paths_mutex);
    plugin_paths()[name] = path;
  }
  return families;
}

std::shared_ptr<layers::Layer> build_plugin_model(const layers::ModelFamily& family, const tuners::TrialConfig& params,
                                                  const layers::ModelInput& input, bool images) {
  const auto name = family_name(family.declaration.name);
  std::shared_ptr<layers::Layer> model;
  try {
    model = family.build(params, input);
  } catch (const InputError& e) {
    throw InputError(name + ": " + e.what());
  } catch (const std::exception& e) {
    throw Error(name + ": its builder failed: " + error_message(e));
  } catch (...) {
    throw Error(name + ": its builder threw something that is not a std::exception");
  }
  if (!model) throw Error(name + ": its builder returned no model (a null pointer)");
  // One example, as the engine lays batches out: [K = 1, B = 1, ...sample].
  const std::vector<std::int64_t> example =
      images ? std::vector<std::int64_t>{1, 1, input.channels, input.height, input.width}
             : std::vector<std::int64_t>{1, 1, input.width};
  const std::vector<std::int64_t> needed{1, 1, input.outputs};
  torch::Tensor out;
  try {
    // Evaluation mode: no dropout draw and no batch-norm statistics, so the check leaves no
    // trace in the model or in the random generators its initialisation came from.
    torch::NoGradGuard no_grad;
    model->eval();
    out = model->forward(torch::zeros(example));
    model->train();
  } catch (const std::exception& e) {
    throw Error(name + ": its model fails on one example of shape " + sizes_text(example) + ": " + error_message(e));
  } catch (...) {
    throw Error(name + ": its model threw something that is not a std::exception on one example of shape " +
                sizes_text(example));
  }
  if (!out.defined() || out.sizes().vec() != needed) {
    throw Error(name + ": its model's output for one example of shape " + sizes_text(example) + " is " +
                (out.defined() ? sizes_text(out.sizes()) : std::string("no tensor")) + ", but the data needs " +
                sizes_text(needed) + " (" + std::to_string(input.outputs) + " outputs per example)");
  }
  return model;
}

}  // namespace packtune::actors
