// A model plugin whose family "faulty" builds a model or fails as its hyper-parameter "fault"
// says: 0 a small working MLP, 1 no model (a null pointer), 2 throws an int, 3 a model with
// three outputs too many, 4 throws a std::runtime_error. Each failure must fail its trial
// alone, naming the plugin and the reason; the actor trains the others on.
#include <memory>
#include <stdexcept>
#include <variant>

#include "layers/flatten.hpp"
#include "layers/linear.hpp"
#include "layers/model_plugin.hpp"
#include "layers/sequential.hpp"

namespace {

packtune::layers::FamilyDeclaration faulty_declaration() {
  packtune::layers::HyperParameter fault;
  fault.name = "fault";
  fault.type = packtune::layers::HyperParameter::Type::Integer;
  fault.role = packtune::layers::HyperParameter::Role::Structure;
  fault.default_value = std::int64_t{0};
  fault.low = 0;
  fault.high = 4;
  fault.help = "0 builds a working model; 1 returns none, 2 throws an int, 3 has 3 outputs too many, 4 throws";
  return {"faulty", {fault}};
}

std::shared_ptr<packtune::layers::Layer> build_faulty(const packtune::tuners::TrialConfig& params,
                                                      const packtune::layers::ModelInput& input) {
  namespace L = packtune::layers;
  const auto fault = std::get<std::int64_t>(params.at("fault"));
  if (fault == 1) return nullptr;
  if (fault == 2) throw 42;
  if (fault == 4) throw std::runtime_error("the builder gave up");
  auto model = std::make_shared<L::Sequential>();
  model->emplace<L::Flatten>();
  model->emplace<L::Linear>(input.channels * input.height * input.width, input.outputs + (fault == 3 ? 3 : 0));
  return model;
}

}  // namespace

PACKTUNE_MODEL_PLUGIN(registry) { registry.add({faulty_declaration(), build_faulty}); }
