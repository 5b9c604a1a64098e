#include <catch2/catch.hpp>

#include <atomic>
#include <cstring>
#include <functional>
#include <map>

#include <ATen/record_function.h>

#include "actors/resnet.hpp"
#include "layers/member_seeds.hpp"
#include "reference/torch_resnet.hpp"
#include "test_device.hpp"

using namespace packtune;
using namespace packtune::actors;
using namespace packtune::spec;

namespace {

using Named = std::map<std::string, torch::Tensor>;

ModelSpec resnet_spec(int stages, int blocks, int channels, bool batch_norm, const std::string& activation,
                      double dropout = 0.0) {
  ModelSpec spec;
  spec.family = "resnet";
  spec.stages = stages;
  spec.blocks = blocks;
  spec.channels = channels;
  spec.batch_norm = batch_norm;
  spec.activation = activation;
  spec.dropout = dropout;
  return spec;
}

// Odd sizes, so that a stride-2 stage rounds up as model_shape() assumes.
const InputShape kInput{3, 9, 11, 5};
constexpr std::int64_t kBatch = 4;

// |a - b| <= tolerance x max(1, |b|), everywhere.
void check_close(const torch::Tensor& a, const torch::Tensor& b, double tolerance = 1e-5) {
  REQUIRE(a.sizes() == b.sizes());
  const auto x = a.detach().to(torch::kCPU, torch::kFloat64), y = b.detach().to(torch::kCPU, torch::kFloat64);
  const double scale = std::max(1.0, y.abs().max().item<double>());
  CHECK((x - y).abs().max().item<double>() <= tolerance * scale);
}

// Member k's gradients by solo name, in solo layout.
Named member_gradients(const layers::Layer& model, std::int64_t k) {
  Named out;
  for (const auto& entry : model.stacked_parameters()) {
    REQUIRE(entry.tensor.grad().defined());
    out[entry.name] = layers::Layer::solo_view(entry, entry.tensor.grad()[k], k);
  }
  return out;
}

// A fixed random direction per output, so every output's gradient is exercised unequally.
torch::Tensor weighted_sum(const torch::Tensor& out, const torch::Tensor& direction) { return (out * direction).sum(); }

}  // namespace

TEST_CASE("build_resnet computes what the same network in torch::nn modules does, gradients included") {
  const auto device = testing::test_device();
  const std::vector<ModelSpec> specs{resnet_spec(3, 2, 4, true, "relu"), resnet_spec(2, 1, 5, false, "tanh"),
                                     resnet_spec(1, 2, 3, true, "gelu"), resnet_spec(2, 2, 3, false, "sigmoid")};
  for (const auto& spec : specs) {
    INFO("stages " << spec.stages << ", blocks " << spec.blocks << ", bn " << spec.batch_norm << ", "
                   << spec.activation);
    torch::manual_seed(1);
    auto model = build_resnet(spec, kInput);
    auto plain = reference::build_resnet(spec, kInput);
    model->to(device);
    plain->to(device);
    // Copy every parameter and buffer by name: the names must match one to one.
    Named plain_tensors;
    for (const auto& p : plain->named_parameters()) plain_tensors[p.key()] = p.value();
    for (const auto& b : plain->named_buffers()) plain_tensors[b.key()] = b.value();
    const auto member = model->member_tensors(0);
    REQUIRE(member.size() == plain_tensors.size());
    {
      torch::NoGradGuard no_grad;
      torch::manual_seed(2);
      for (const auto& [name, tensor] : member) {
        INFO("tensor " << name);
        REQUIRE(plain_tensors.count(name) == 1);
        // Batch norm's affine parameters away from their 1 and 0, so that a mix-up shows.
        if (tensor.is_floating_point()) tensor.add_(torch::randn(tensor.sizes(), tensor.options()) * 0.1);
        plain_tensors[name].copy_(tensor);
      }
    }
    const auto x = torch::randn({kBatch, kInput.channels, kInput.height, kInput.width}, device);
    const auto direction = torch::randn({kBatch, kInput.outputs}, device);
    const auto out = model->forward(x.unsqueeze(0));
    const auto expected = plain->forward(x);
    REQUIRE(out.sizes() == torch::IntArrayRef{1, kBatch, kInput.outputs});
    check_close(out[0], expected);
    weighted_sum(out[0], direction).backward();
    weighted_sum(expected, direction).backward();
    const auto grads = member_gradients(*model, 0);
    std::size_t compared = 0;
    for (const auto& p : plain->named_parameters()) {
      INFO("gradient of " << p.key());
      REQUIRE(grads.count(p.key()) == 1);
      check_close(grads.at(p.key()), p.value().grad());
      ++compared;
    }
    CHECK(compared == grads.size());
    // The running statistics moved alike.
    for (const auto& [name, tensor] : model->member_tensors(0)) {
      INFO("buffer " << name);
      if (name.find("running_") != std::string::npos) check_close(tensor, plain_tensors[name]);
    }
  }
}

TEST_CASE("Three ResNets of unlike widths fused by append() each compute what they compute alone") {
  const auto device = testing::test_device();
  // The widest member is not the first; sigmoid leaves 0.5 on padded channels, which the
  // identity shortcuts carry on to the next convolution's zero weights. Grouped: the GPU's
  // one grouped convolution and batch norm over all members, here on any device.
  const std::vector<int> widths{6, 4, 8};
  const std::vector<double> rates{0.2, 0.1, 0.4};
  const auto kernels = GENERATE(layers::MemberKernels::Auto, layers::MemberKernels::Grouped);
  testing::MemberKernelsScope kernels_scope(kernels);
  for (const auto& [activation, batch_norm] : std::vector<std::pair<std::string, bool>>{
           {"relu", true}, {"sigmoid", false}, {"gelu", true}}) {
    INFO(activation << ", bn " << batch_norm << ", grouped kernels " << (kernels == layers::MemberKernels::Grouped));
    std::vector<std::shared_ptr<layers::Layer>> solo;
    for (std::size_t k = 0; k < widths.size(); ++k) {
      torch::manual_seed(10 + k);
      solo.push_back(build_resnet(resnet_spec(2, 2, widths[k], batch_norm, activation, rates[k]), kInput));
      solo.back()->to(device);
    }
    torch::manual_seed(10);
    auto fused = build_resnet(resnet_spec(2, 2, widths[0], batch_norm, activation, rates[0]), kInput);
    fused->to(device);
    fused->append(*solo[1]);
    fused->append(*solo[2]);
    const std::int64_t members = static_cast<std::int64_t>(widths.size());
    REQUIRE(fused->members() == members);

    const auto x = torch::randn({members, kBatch, kInput.channels, kInput.height, kInput.width}, device);
    const auto direction = torch::randn({members, kBatch, kInput.outputs}, device);
    const auto seeds = torch::tensor(std::vector<std::int64_t>{11, 22, 33}, torch::kInt64).to(device);
    torch::Tensor out;
    {
      layers::MemberSeeds scope(seeds);
      out = fused->forward(x);
    }
    weighted_sum(out, direction).backward();
    for (std::int64_t k = 0; k < members; ++k) {
      INFO("member " << k << " (" << widths[static_cast<std::size_t>(k)] << " channels)");
      torch::Tensor alone;
      {
        layers::MemberSeeds scope(seeds.narrow(0, k, 1));
        alone = solo[static_cast<std::size_t>(k)]->forward(x.narrow(0, k, 1));
      }
      weighted_sum(alone, direction.narrow(0, k, 1)).backward();
      check_close(out[k], alone[0]);
      const auto fused_grads = member_gradients(*fused, k), solo_grads = member_gradients(*solo[static_cast<std::size_t>(k)], 0);
      REQUIRE(fused_grads.size() == solo_grads.size());
      for (const auto& [name, grad] : solo_grads) {
        INFO("gradient of " << name);
        REQUIRE(fused_grads.count(name) == 1);
        check_close(fused_grads.at(name), grad);
      }
      // The running statistics too: each member's batch statistics are its own.
      Named solo_tensors;
      for (const auto& [name, t] : solo[static_cast<std::size_t>(k)]->member_tensors(0)) solo_tensors[name] = t;
      for (const auto& [name, t] : fused->member_tensors(k)) {
        INFO("tensor " << name);
        if (name.find("running_") != std::string::npos) check_close(t, solo_tensors.at(name));
      }
    }
  }
}

TEST_CASE("model_shape counts build_resnet's parameters") {
  for (const auto& spec : {resnet_spec(3, 1, 16, true, "relu"), resnet_spec(2, 3, 5, false, "tanh", 0.3),
                           resnet_spec(4, 2, 2, true, "gelu", 0.1), resnet_spec(1, 1, 7, false, "relu")}) {
    INFO("stages " << spec.stages << ", blocks " << spec.blocks << ", channels " << spec.channels << ", bn "
                   << spec.batch_norm);
    auto model = build_resnet(spec, kInput);
    std::int64_t parameters = 0, largest = 0;
    for (const auto& p : model->parameters()) {
      parameters += p.numel();
      largest = std::max(largest, p.numel());
    }
    const auto shape = model_shape(spec, kInput.channels, kInput.height, kInput.width, kInput.outputs);
    CHECK(shape.parameters == parameters);
    CHECK(shape.largest_parameter == largest);
  }
}

TEST_CASE("build_resnet's output keeps the batch and gives one logit per class, stride-2 stages included") {
  const auto spec = resnet_spec(4, 1, 2, true, "relu");
  auto model = build_resnet(spec, InputShape{1, 28, 28, 10});
  model->eval();
  const auto out = model->forward(torch::randn({1, 3, 1, 28, 28}));
  CHECK(out.sizes() == torch::IntArrayRef{1, 3, 10});
}

namespace {

std::atomic<int> copies{0};
std::atomic<std::int64_t> copied{0};  // their elements

std::unique_ptr<at::ObserverContext> count_copies(const at::RecordFunction& fn) {
  if (std::strcmp(fn.name(), "aten::copy_") != 0) return nullptr;
  // Not the scalars that reductions and casts copy (a mean's divisor): only tensors of at
  // least one value per sample of a member.
  const auto inputs = fn.inputs();
  if (inputs.empty() || !inputs[0].isTensor() || inputs[0].toTensor().numel() < kBatch) return nullptr;
  ++copies;
  copied += inputs[0].toTensor().numel();
  return nullptr;
}

// The aten::copy_ calls (every contiguous(), clone() and reshape that cannot view) of tensors
// while `run` runs, on any thread.
std::pair<int, std::int64_t> copies_during(const std::function<void()>& run) {
  copies = 0;
  copied = 0;
  const auto handle = at::addGlobalCallback(at::RecordFunctionCallback(count_copies).needsInputs(true));
  run();
  at::removeCallback(handle);
  return {copies.load(), copied.load()};
}

}  // namespace

TEST_CASE("a fused ResNet on the grouped path copies no activation between its layers") {
  // The GPU's path, here on the CPU: activations stay batch-major ([B, K, C, H, W] in memory)
  // from the stem on, so convolutions, batch norms, pooling and residual adds read them as
  // [B, K*C, ...] views. A layer that copied its input would add copies with every block.
  testing::MemberKernelsScope kernels_scope(layers::MemberKernels::Grouped);
  const InputShape input{1, 12, 12, 10};  // one channel, as Fashion-MNIST: the stem runs member by member
  constexpr std::int64_t members = 4;
  auto count = [&](int blocks) {
    torch::manual_seed(3);
    auto fused = build_resnet(resnet_spec(3, blocks, 8, true, "relu"), input);
    for (std::int64_t k = 1; k < members; ++k) fused->append(*build_resnet(resnet_spec(3, blocks, 8, true, "relu"), input));
    const auto x = torch::randn({members, kBatch, input.channels, input.height, input.width});
    torch::Tensor out;
    const auto forward = copies_during([&] { out = fused->forward(x); });
    const auto backward = copies_during([&] { out.square().sum().backward(); });
    return std::make_pair(forward, backward);
  };
  const auto shallow = count(1), deep = count(3);
  INFO("copies (elements) forward: 1 block a stage " << shallow.first.first << " (" << shallow.first.second
       << "), 3 blocks " << deep.first.first << " (" << deep.first.second << "); backward: " << shallow.second.first
       << " (" << shallow.second.second << "), " << deep.second.first << " (" << deep.second.second << ")");
  CHECK(deep == shallow);
  // Forward, only the classifier's baddbmm writing its bias into its output, [K, B, outputs].
  // Member-major, the stem's batch norm and the pooling each copied their whole input too.
  // Backward, a constant few: the stem's per-member convolutions take their slices of the
  // batch-major gradient contiguous, and the classifier's gradient is reshaped back to the
  // pooled layout.
  CHECK(deep.first.second <= members * kBatch * input.outputs);
}
