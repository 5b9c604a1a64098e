#include "layers/activation.hpp"

#include <algorithm>

#include "packtune/error.hpp"

namespace packtune::layers {
namespace {

struct ContiguousGelu : torch::autograd::Function<ContiguousGelu> {
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& x) {
    ctx->save_for_backward({x});
    return torch::gelu(x);
  }
  static torch::autograd::tensor_list backward(torch::autograd::AutogradContext* ctx,
                                               torch::autograd::tensor_list grads) {
    const auto x = ctx->get_saved_variables()[0];
    return {torch::gelu_backward(grads[0].contiguous(), x)};
  }
};

}  // namespace

torch::Tensor gelu(const torch::Tensor& x) {
  if (!x.requires_grad() || !torch::GradMode::is_enabled()) return torch::gelu(x);
  return ContiguousGelu::apply(x);
}

const std::vector<std::string>& Activation::names() {
  static const std::vector<std::string> all = {"relu", "tanh", "gelu", "sigmoid", "silu", "elu", "leaky_relu"};
  return all;
}

Activation::Activation(const std::string& name) : name_(name) {
  const auto& all = names();
  if (std::find(all.begin(), all.end(), name) == all.end()) {
    std::string list;
    for (const auto& n : all) list += (list.empty() ? "" : ", ") + n;
    throw InputError("activation: unknown activation \"" + name + "\"; expected one of " + list);
  }
}

void Activation::check_values(const Layer& other) const {
  const auto& theirs = dynamic_cast<const Activation&>(other).name_;
  if (theirs != name_) throw Error("cannot fuse activations " + name_ + " and " + theirs);
}

torch::Tensor Activation::forward(const torch::Tensor& x) {
  if (name_ == "relu") return torch::relu(x);
  if (name_ == "tanh") return torch::tanh(x);
  if (name_ == "gelu") return layers::gelu(x);
  if (name_ == "sigmoid") return torch::sigmoid(x);
  if (name_ == "silu") return torch::silu(x);
  if (name_ == "elu") return torch::elu(x);
  return torch::leaky_relu(x, 0.01);
}

}  // namespace packtune::layers
