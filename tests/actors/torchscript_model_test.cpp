// The torchscript family (actors/torchscript_model.hpp): a scripted module trains as PyTorch
// trains it, resumes bit for bit, never fuses, and every bad file is refused with one line.
// The .pt files are written at test time by torchscript_modules.py (the CTest fixture
// actors/torchscript_modules), which is also the oracle that trains a module in Python.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>

#include <nlohmann/json.hpp>

#include "actors/fused_group.hpp"
#include "actors/pack_executor.hpp"
#include "actors/torchscript_file.hpp"
#include "packtune/error.hpp"
#include "synthetic_data.hpp"
#include "../temp_dir.hpp"

using namespace packtune;
using namespace packtune::actors;
using packtune::testing::synthetic_split;

namespace {

using State = std::vector<std::pair<std::string, torch::Tensor>>;

const spec::InputShape kInput{1, 10, 10, 10};

std::string module_file(const std::string& name) { return std::string(PACKTUNE_TORCHSCRIPT_DIR) + "/" + name; }

spec::TrialSpec torchscript_spec(const std::string& file, tuners::TrialConfig extra = {}) {
  tuners::TrialConfig config{{"family", std::string("torchscript")},
                             {"path", module_file(file)},
                             {"batch_size", std::int64_t{16}},
                             {"optimizer", std::string("sgd")},
                             {"lr", 0.05},
                             {"momentum", 0.9}};
  for (const auto& [key, value] : extra) config[key] = value;
  return spec::parse_trial_spec(config);
}

std::vector<float> values_of(const torch::Tensor& t) {
  const auto c = t.detach().to(torch::kCPU, torch::kFloat32).contiguous();
  return std::vector<float>(c.data_ptr<float>(), c.data_ptr<float>() + c.numel());
}

// The largest difference between two states of one module, name by name (REQUIREs equal names
// and shapes).
double max_difference(const State& a, const State& b) {
  REQUIRE(a.size() == b.size());
  std::map<std::string, torch::Tensor> by_name(b.begin(), b.end());
  double most = 0;
  for (const auto& [name, tensor] : a) {
    INFO("tensor " << name);
    REQUIRE(by_name.count(name) == 1);
    REQUIRE(tensor.sizes() == by_name[name].sizes());
    const auto diff = (tensor.to(torch::kFloat64) - by_name[name].to(torch::kFloat64)).abs().max().item<double>();
    most = std::max(most, diff);
  }
  return most;
}

// The LibTorch library this process runs on (its CPU kernels), resolved: "" if none is found.
std::string loaded_libtorch() {
  std::ifstream maps("/proc/self/maps");
  for (std::string line; std::getline(maps, line);) {
    if (line.find("libtorch_cpu") == std::string::npos) continue;
    std::error_code ec;
    const auto path = std::filesystem::canonical(line.substr(line.find('/')), ec);
    return ec ? std::string() : path.string();
  }
  return {};
}

}  // namespace

TEST_CASE("a TorchScript module trains as PyTorch trains it in Python: within 1e-6, bit for bit unfused on its LibTorch") {
  // SGD with momentum and weight decay, 20 steps of the same batches: packtune's engine (the
  // module's forward and backward on its bound parameters and batch-norm buffers, its loss,
  // its fused optimizer) against PyTorch's own training of the same file.
  torch::set_num_threads(1);
  const auto spec = torchscript_spec("small.pt", {{"weight_decay", 1e-3}});
  datasets::BatchStream stream(synthetic_split(320, 40), torch::kCPU, 11);
  FusedGroup group(spec, kInput, torch::kCPU);
  group.add(0, spec, 5);
  nlohmann::json run{{"lr", 0.05}, {"momentum", 0.9}, {"weight_decay", 1e-3}, {"input_shape", {1, 10, 10}}};
  for (int step = 0; step < 20; ++step) {
    stream.begin_round();
    const auto [x, y] = stream.batch(step, 16, 5);
    const auto labels = y.contiguous();
    run["steps"].push_back({{"x", values_of(x)},
                            {"y", std::vector<std::int64_t>(labels.data_ptr<std::int64_t>(),
                                                            labels.data_ptr<std::int64_t>() + labels.numel())}});
    group.train_step(stream);
  }
  const packtune::testing::TempDir dir;
  const auto batches = dir.file("batches.json");
  std::ofstream(batches) << run.dump();
  std::string python_library;
  const auto trained_in_python = [&](const std::string& option) {
    const auto trained = dir.file("trained" + option + ".json");
    const std::string command = std::string(PACKTUNE_REFERENCE_PYTHON) + " " + PACKTUNE_TORCHSCRIPT_SCRIPT +
                                " train " + module_file("small.pt") + " " + batches + " " + trained + " " + option;
    REQUIRE(std::system(command.c_str()) == 0);
    nlohmann::json answer;
    std::ifstream(trained) >> answer;
    python_library = answer.at("libtorch").get<std::string>();
    const auto& expected = answer.at("state");
    State python;
    for (const auto& [name, tensor] : group.member_state(0)) {
      INFO("tensor " << name);
      REQUIRE(expected.contains(name));
      const bool counter = tensor.scalar_type() == torch::kInt64;
      python.emplace_back(name, torch::tensor(expected[name].get<std::vector<double>>(), torch::kFloat64)
                                    .to(counter ? torch::kInt64 : torch::kFloat32)
                                    .reshape(tensor.sizes()));
    }
    CHECK(python.size() == expected.size());
    return python;
  };
  // torch.optim.SGD fuses some of its multiply-adds (LibTorch's vectorised add with alpha), which
  // packtune's CPU step never does (docs/reproducibility.md): 3.0e-7 apart after 20 steps here.
  const double difference = max_difference(group.member_state(0), trained_in_python(""));
  INFO("largest difference from torch.optim.SGD: " << difference);
  CHECK(difference <= 1e-6);
  // With SGD's step written out as packtune rounds it, everything else is the same, bit for
  // bit: the forward and backward through the bound tensors, batch norm's statistics, the loss;
  // when Python's PyTorch runs on the very library packtune links (Debian's 1.13 both). Another
  // LibTorch (the torch2 build's) has kernels of its own: 2.4e-7 apart there.
  const double unfused = max_difference(group.member_state(0), trained_in_python("--unfused"));
  const auto own_library = loaded_libtorch();
  INFO("packtune's LibTorch: " << own_library << "; Python's: " << python_library);
  CHECK(unfused <= 1e-6);
  if (!own_library.empty() && own_library == python_library) CHECK(unfused == 0);
}

TEST_CASE("a TorchScript member with dropout resumes from its checkpoint bit for bit") {
  torch::set_num_threads(1);
  const auto spec = torchscript_spec("dropout.pt");
  const auto split = synthetic_split(320, 40);
  const auto train = [&](FusedGroup& group, datasets::BatchStream& stream, int steps) {
    for (int s = 0; s < steps; ++s) {
      stream.begin_round();
      group.train_step(stream);
    }
  };
  datasets::BatchStream stream(split, torch::kCPU, 11);
  FusedGroup whole(spec, kInput, torch::kCPU);
  whole.add(3, spec, 9);
  train(whole, stream, 12);

  datasets::BatchStream first_stream(split, torch::kCPU, 11);
  FusedGroup first(spec, kInput, torch::kCPU);
  first.add(3, spec, 9);
  train(first, first_stream, 5);
  TrialCheckpoint checkpoint;
  checkpoint.trial = 3;
  first.capture(3, checkpoint);
  datasets::BatchStream second_stream(split, torch::kCPU, 11);
  FusedGroup second(spec, kInput, torch::kCPU);
  second.add(3, spec, 9, &checkpoint);
  train(second, second_stream, 7);
  CHECK(second.step_of(3) == 12);
  CHECK(max_difference(second.member_state(3), whole.member_state(3)) == 0);

  SECTION("its draws follow the trial's seed") {
    datasets::BatchStream other_stream(split, torch::kCPU, 11);
    FusedGroup other(spec, kInput, torch::kCPU);
    other.add(3, spec, 10);
    train(other, other_stream, 12);
    CHECK(max_difference(other.member_state(3), whole.member_state(3)) > 0);
  }
}

TEST_CASE("TorchScript trials are packed, never fused") {
  datasets::BatchStream stream(synthetic_split(320, 40), torch::kCPU, 11);
  PackExecutor pack(stream, BudgetUnit::Steps, /*fuse=*/true);
  for (tuners::TrialId trial : {0, 1, 2}) {
    PackJob job;
    job.trial = trial;
    job.spec = torchscript_spec("small.pt");
    job.seed = 40 + static_cast<std::uint64_t>(trial);
    job.budget = 3;
    pack.add(job);
  }
  CHECK(pack.fused_groups() == 3);
  std::size_t finals = 0;
  while (!pack.empty()) {
    for (const auto& e : pack.step_round()) {
      CHECK(e.error.empty());
      finals += e.final ? 1 : 0;
    }
  }
  CHECK(finals == 3);

  SECTION("a group refuses a second member") {
    const auto spec = torchscript_spec("small.pt");
    FusedGroup group(spec, kInput, torch::kCPU);
    group.add(0, spec, 1);
    CHECK_THROWS_WITH(group.add(1, spec, 2), Catch::Contains("does not fuse"));
    CHECK(group.size() == 1);
  }
}

TEST_CASE("a bad TorchScript file is refused with one line that names it and what is wrong") {
  const std::vector<std::pair<std::string, std::string>> refused{
      {"missing.pt", "no such file"},
      {"not_a_zip.pt", "not a TorchScript file (not even a zip archive)"},
      {"pickled.pt", "a zip archive without TorchScript code (torch.save of a model or a state dict?)"},
      {"newer.pt", "saved by a newer PyTorch: its TorchScript file format is version 99, and LibTorch "},
      {"no_forward.pt", "the module has no forward method"},
      {"throws.pt", "its forward fails on a batch of shape [2, 1, 10, 10]: RuntimeError: shape '[-1, 7, 3]' is "
                    "invalid for input of size 200 ("},
      {"wrong_shape.pt", "its forward returns [2, 5] for a batch of shape [2, 1, 10, 10], but the data needs [2, 10]"},
      {"float64_output.pt", "its forward returns Double outputs"},
      {"tuple_output.pt", "its forward returns Tuple, not a tensor"},
      {"constant.pt", "its output does not depend on its parameters"},
      {"float64_parameters.pt", "parameter conv.weight is Double"},
  };
  for (const auto& [file, why] : refused) {
    INFO(file);
    try {
      load_torchscript(module_file(file), kInput, torch::kCPU);
      FAIL("loaded");
    } catch (const InputError& e) {
      const std::string text = e.what();
      CHECK(text.rfind("model.path: " + module_file(file) + ": ", 0) == 0);
      CHECK_THAT(text, Catch::Contains(why));
      CHECK(text.find('\n') == std::string::npos);
    }
  }
  // A trial of such a file fails when its model is built, with the same line.
  const auto spec = torchscript_spec("wrong_shape.pt");
  FusedGroup group(spec, kInput, torch::kCPU);
  CHECK_THROWS_AS(group.add(0, spec, 1), InputError);
  CHECK(load_torchscript(module_file("small.pt"), kInput, torch::kCPU).find_method("forward"));
}

TEST_CASE("a TorchScript trial sets the module attributes its config names before it trains") {
  torch::set_num_threads(1);
  const auto split = synthetic_split(320, 40);
  const auto trained = [&](tuners::TrialConfig attributes) {
    const auto spec = torchscript_spec("rated.pt", std::move(attributes));
    datasets::BatchStream stream(split, torch::kCPU, 11);
    FusedGroup group(spec, kInput, torch::kCPU);
    group.add(0, spec, 4);
    for (int s = 0; s < 4; ++s) {
      stream.begin_round();
      group.train_step(stream);
    }
    return group.member_state(0);
  };
  const auto none = trained({});
  CHECK(max_difference(trained({{"rate", 0.0}}), none) == 0);
  CHECK(max_difference(trained({{"rate", 0.5}}), none) > 0);
  // An integer where a float attribute is; a flag and a string of their own types.
  CHECK(max_difference(trained({{"rate", std::int64_t{0}}, {"flag", true}, {"label", std::string("x")}}), none) == 0);

  const auto module = load_torchscript(module_file("rated.pt"), kInput, torch::kCPU);
  const auto path = module_file("rated.pt");
  const std::vector<std::pair<AttributeKind, std::string>> refused{
      {{"model.missing", "real"}, "model.missing: neither a training key of model family torchscript nor an attribute "
                                  "of the module at " + path + " (its attributes: rate, flag, label)"},
      {{"space.rate", "string"}, "space.rate: the module at " + path + " holds a float there, which takes no string"},
      {{"model.flag", "integer"}, "holds a bool there"},
      {{"model.k", "real"}, "model.k: a constant of the module at " + path},
      {{"model.body", "integer"}, "model.body: a parameter, buffer or submodule of the module"},
      {{"model.training", "bool"}, "model.training: neither a training key"},
  };
  for (const auto& [attribute, why] : refused) {
    INFO(attribute.at);
    CHECK_THROWS_WITH(check_torchscript_attributes(module, path, {attribute}), Catch::StartsWith(why) || Catch::Contains(why));
  }
  CHECK_NOTHROW(check_torchscript_attributes(module, path, {{"model.rate", "integer"}, {"space.label", "string"}}));
  const auto spec = torchscript_spec("rated.pt", {{"rate", std::string("high")}});
  FusedGroup group(spec, kInput, torch::kCPU);
  CHECK_THROWS_WITH(group.add(0, spec, 1), Catch::StartsWith("model.rate: the module at " + path + " holds a float"));
}
