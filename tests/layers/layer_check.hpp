#pragma once
// What every layer test checks: a fused layer (members built alone, fused with append, inputs
// zero-padded to the widest) against each member's own LibTorch module on its own input, in
// outputs and in the gradients of the input and of every parameter; and keep().
//
// Tolerance: the largest absolute difference, divided by the largest expected magnitude when
// that is above 1 (relative for large values, absolute for small ones): 1e-5 on the CPU; on
// CUDA 2e-3, as tests/actors/fused_group_test.cpp allows there (other kernels, other sums).
#include <catch2/catch.hpp>

#include <algorithm>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "../actors/test_device.hpp"
#include "layers/layer.hpp"
#include "layers/member_seeds.hpp"
#include "packtune/error.hpp"

namespace packtune::testing {

using layers::Layer;
using layers::Shape;

inline double tolerance(const torch::Device& device) { return device.is_cuda() ? 2e-3 : 1e-5; }

// max |actual - expected| / max(1, max |expected|), in float64 on the CPU.
inline double scaled_diff(const torch::Tensor& actual, const torch::Tensor& expected) {
  auto a = actual.detach().cpu().to(torch::kFloat64), e = expected.detach().cpu().to(torch::kFloat64);
  if (e.numel() == 0) return 0;
  const double scale = std::max(1.0, e.abs().max().item<double>());
  return (a - e).abs().max().item<double>() / scale;
}

inline void check_close(const torch::Tensor& actual, const torch::Tensor& expected, double tol,
                        const std::string& what) {
  INFO(what << ": shapes " << actual.sizes() << " and " << expected.sizes());
  REQUIRE(actual.sizes() == expected.sizes());
  const double diff = scaled_diff(actual, expected);
  INFO(what << ": scaled difference " << diff << ", tolerance " << tol);
  CHECK(diff <= tol);
}

// The widest of `shapes` (same rank), dimension by dimension.
inline Shape widest(const std::vector<Shape>& shapes) {
  Shape out = shapes.front();
  for (const auto& s : shapes) {
    for (std::size_t d = 0; d < s.size(); ++d) out[d] = std::max(out[d], s[d]);
  }
  return out;
}

// Members' own tensors zero-padded to the widest and stacked: [K, ...].
inline torch::Tensor stack_padded(const std::vector<torch::Tensor>& own) {
  std::vector<Shape> shapes;
  for (const auto& t : own) shapes.push_back(t.sizes().vec());
  const auto wide = widest(shapes);
  std::vector<torch::Tensor> padded;
  for (const auto& t : own) padded.push_back(layers::fit_to(t, wide));
  return torch::stack(padded);
}

// A member's solo state: its LibTorch module's parameters and buffers by name.
inline std::map<std::string, torch::Tensor> solo_state(const torch::nn::Module& solo) {
  std::map<std::string, torch::Tensor> out;
  for (const auto& p : solo.named_parameters()) out[p.key()] = p.value();
  for (const auto& b : solo.named_buffers()) out[b.key()] = b.value();
  return out;
}

// Member k's tensors (member_tensors) are the solo module's state dict: the same names, and
// values equal to `tol` (0: bitwise).
inline void check_state(const Layer& layer, std::int64_t k, const torch::nn::Module& solo, double tol = 0) {
  const auto mine = layer.member_tensors(k);
  auto theirs = solo_state(solo);
  REQUIRE(mine.size() == theirs.size());
  for (const auto& [name, tensor] : mine) {
    INFO("member " << k << ", tensor " << name);
    REQUIRE(theirs.count(name) == 1);
    const auto& expected = theirs[name];
    REQUIRE(tensor.sizes() == expected.sizes());
    if (tol == 0 || !tensor.is_floating_point()) {
      CHECK(torch::equal(tensor.cpu(), expected.cpu()));
    } else {
      check_close(tensor, expected, tol, name);
    }
  }
}

// One member of a fused test: the layer built alone (K = 1), its LibTorch reference built from
// the same RNG state, the reference's forward on a solo input ([B, ...]), and the member's input.
struct Member {
  std::shared_ptr<Layer> layer;
  std::shared_ptr<torch::nn::Module> solo;
  std::function<torch::Tensor(const torch::Tensor&)> solo_forward;
  torch::Tensor input;  // [B, ...], the member's own width
};

template <class T>
std::shared_ptr<torch::nn::Module> module_ptr(const torch::nn::ModuleHolder<T>& holder) {
  return holder.ptr();
}
template <class T>
std::shared_ptr<torch::nn::Module> module_ptr(const std::shared_ptr<T>& module) {
  return module;
}

// Builds a Member: seeds LibTorch's generator with `seed`, builds the reference, seeds again
// and builds the layer (both initialised from the same draws).
template <class MakeSolo, class MakeLayer, class Forward>
Member make_member(std::uint64_t seed, MakeSolo make_solo, MakeLayer make_layer, Forward forward, torch::Tensor input) {
  torch::manual_seed(seed);
  auto solo = make_solo();
  torch::manual_seed(seed);
  auto layer = make_layer();
  auto module = module_ptr(solo);
  return {layer, module, [solo, forward](const torch::Tensor& x) mutable { return forward(solo, x); }, input};
}

struct FusedCheck {
  bool padded_outputs_zero = true;  // padded outputs must be exactly 0 (not for sigmoid)
  bool train = true;                // train() or eval() mode for both
  // The fused computation under test; the layer's forward by default.
  std::function<torch::Tensor(Layer&, const torch::Tensor&)> fused_forward;
};

// The fused layer (the first member's layer with the others appended) and its padded input.
struct Fused {
  std::shared_ptr<Layer> layer;
  torch::Tensor input;
};

// Checks initialisation, then fuses `members` and compares forward and gradients member by
// member with their references on the test device. Returns the fused layer (on the device).
inline Fused check_fused(std::vector<Member> members, const FusedCheck& check = {}) {
  const auto device = test_device();
  const double tol = tolerance(device);
  for (auto& m : members) check_state(*m.layer, 0, *m.solo);
  auto fused = members.front().layer;
  for (std::size_t i = 1; i < members.size(); ++i) fused->append(*members[i].layer);
  REQUIRE(fused->members() == static_cast<std::int64_t>(members.size()));
  for (std::size_t i = 0; i < members.size(); ++i) check_state(*fused, static_cast<std::int64_t>(i), *members[i].solo);
  fused->to(device);
  fused->train(check.train);
  std::vector<torch::Tensor> inputs, outputs, upstream;
  for (auto& m : members) {
    m.solo->to(device);
    m.solo->train(check.train);
    inputs.push_back(m.input.to(device));
  }
  const bool float_input = inputs.front().is_floating_point();
  auto x = stack_padded(inputs).detach();
  if (float_input) x.requires_grad_(true);
  auto y = check.fused_forward ? check.fused_forward(*fused, x) : fused->forward(x);

  torch::manual_seed(7);
  for (std::size_t i = 0; i < members.size(); ++i) {
    auto own = inputs[i].detach();
    if (float_input) own.requires_grad_(true);
    inputs[i] = own;
    auto out = members[i].solo_forward(own);
    outputs.push_back(out);
    upstream.push_back(torch::randn(out.sizes(), out.options()));
    (out * upstream.back()).sum().backward();
  }
  // Upstream gradients zero on padded outputs, as a sum of the members' own losses gives.
  (y * stack_padded(upstream)).sum().backward();

  for (std::size_t i = 0; i < members.size(); ++i) {
    const auto k = static_cast<std::int64_t>(i);
    INFO("member " << k << " of " << members.size());
    const auto mine = y[k];
    check_close(layers::own_part(mine, outputs[i].sizes().vec()), outputs[i], tol, "output");
    if (check.padded_outputs_zero) {
      auto rest = mine.detach().clone();
      layers::own_part(rest, outputs[i].sizes().vec()).zero_();
      CHECK(rest.abs().max().item<double>() == 0);
    }
    if (float_input) {
      check_close(layers::own_part(x.grad()[k], inputs[i].sizes().vec()), inputs[i].grad(), tol, "input gradient");
    }
    auto solo_params = members[i].solo->named_parameters();
    for (const auto& entry : fused->stacked_parameters()) {
      INFO("parameter " << entry.name);
      auto* expected = solo_params.find(entry.name);
      REQUIRE(expected != nullptr);
      REQUIRE(entry.tensor.grad().defined());
      REQUIRE(expected->grad().defined());
      check_close(Layer::solo_view(entry, entry.tensor.grad()[k], k), expected->grad(), tol, "gradient of " + entry.name);
    }
  }
  return {fused, x.detach()};
}

// Dropout inside a layer: `fused` (the members of `alone` appended in order), trained in one
// MemberSeeds scope of `seeds`, gives each member what `alone[i]` gives in a scope of its seed
// alone; and a member of a `rates[i]` above 0 gives other outputs than in eval() mode (its masks
// dropped something), one of rate 0 the same.
inline void check_member_masks(Layer& fused, const std::vector<std::shared_ptr<Layer>>& alone,
                               const std::vector<torch::Tensor>& inputs, const std::vector<std::int64_t>& seeds,
                               const std::vector<double>& rates) {
  const auto device = test_device();
  fused.to(device);
  fused.train();
  torch::Tensor y;
  {
    layers::MemberSeeds scope(torch::tensor(seeds, torch::kInt64).to(device));
    y = fused.forward(stack_padded(inputs).to(device));
  }
  for (std::size_t i = 0; i < alone.size(); ++i) {
    INFO("member " << i << ", rate " << rates[i]);
    auto& layer = *alone[i];
    layer.to(device);
    layer.train();
    const auto input = inputs[i].unsqueeze(0).to(device);
    torch::Tensor own;
    {
      layers::MemberSeeds scope(torch::tensor({seeds[i]}, torch::kInt64).to(device));
      own = layer.forward(input)[0];
    }
    check_close(layers::own_part(y[static_cast<std::int64_t>(i)], own.sizes().vec()), own, tolerance(device), "output");
    layer.eval();
    const double from_eval = scaled_diff(own, layer.forward(input)[0]);
    if (rates[i] > 0) {
      CHECK(from_eval > 1e-3);
    } else {
      CHECK(from_eval <= tolerance(device));
    }
  }
}

// keep(): the members at `which` give the outputs they gave before, and every stacked tensor
// shrinks to the widest kept member. `inputs`: each member's own input (as fused).
inline void check_keep(Layer& fused, const std::vector<torch::Tensor>& inputs, const std::vector<std::int64_t>& which,
                       bool train = true) {
  const auto device = test_device();
  fused.train(train);
  torch::Tensor before;
  {
    torch::NoGradGuard no_grad;
    before = fused.forward(stack_padded(inputs).to(device));
  }
  std::vector<std::vector<std::pair<std::string, torch::Tensor>>> states;
  for (auto k : which) states.push_back(fused.member_tensors(k));
  for (auto& s : states) {
    for (auto& [name, t] : s) t = t.clone();
  }
  fused.keep(which);
  REQUIRE(fused.members() == static_cast<std::int64_t>(which.size()));
  for (bool buffers : {false, true}) {
    for (const auto& entry : buffers ? fused.stacked_buffers() : fused.stacked_parameters()) {
      INFO("tensor " << entry.name);
      auto wide = widest(entry.own);
      wide.insert(wide.begin(), static_cast<std::int64_t>(which.size()));
      CHECK(entry.tensor.sizes().vec() == wide);
    }
  }
  for (std::size_t j = 0; j < which.size(); ++j) {
    const auto mine = fused.member_tensors(static_cast<std::int64_t>(j));
    REQUIRE(mine.size() == states[j].size());
    for (std::size_t t = 0; t < mine.size(); ++t) CHECK(torch::equal(mine[t].second, states[j][t].second));
  }
  std::vector<torch::Tensor> kept;
  for (auto k : which) kept.push_back(inputs[static_cast<std::size_t>(k)]);
  torch::NoGradGuard no_grad;
  const auto after = fused.forward(stack_padded(kept).to(device));
  // The output's padding is the widest kept member's.
  for (std::size_t j = 0; j < which.size(); ++j) {
    INFO("kept member " << j << " (was " << which[j] << ")");
    const auto mine = after[static_cast<std::int64_t>(j)];
    const auto was = before[which[j]];
    // Compared on the smaller of the two (the member's own part lies within both).
    Shape common;
    for (std::int64_t d = 0; d < mine.dim(); ++d) common.push_back(std::min(mine.size(d), was.size(d)));
    check_close(layers::own_part(mine, common), layers::own_part(was, common), tolerance(device), "output after keep");
  }
}

}  // namespace packtune::testing
