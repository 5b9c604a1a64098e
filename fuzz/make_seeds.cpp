// Writes the fuzz targets' seed inputs into DIR/<target>/: encoded messages of every verb
// (fuzz_message), join conversations of nodes and actors (fuzz_handshake), configs of every
// tuner and model family (fuzz_config), `plan --actors` specs of every form (fuzz_actor_groups)
// and real checkpoint files (fuzz_checkpoint), all made
// by packtune's own encoders and writer so that the seeds follow the formats as they are.
// Usage: make_seeds DIR
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "actors/checkpoint_file.hpp"
#include "fuzz/records.hpp"
#include "protocol/node_bundle.hpp"
#include "protocol/protocol.hpp"
#include "spec/trial_spec.hpp"

namespace {

namespace fs = std::filesystem;
namespace proto = packtune::protocol;
using packtune::actors::StoredTensor;
using packtune::actors::TensorBytes;
using packtune::actors::TensorType;
using packtune::actors::TrialCheckpoint;

void write(const fs::path& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  out << bytes;
  if (!out.flush()) throw std::runtime_error("cannot write " + path.string());
}

std::vector<proto::Message> messages() {
  const packtune::tuners::TrialConfig config{{"lr", 0.003},
                                             {"width", std::int64_t{256}},
                                             {"optimizer", std::string("adam")},
                                             {"nesterov", true},
                                             {"lr_schedule", std::string("cosine")},
                                             {"lr_warmup", 0.5},
                                             {"label_smoothing", 0.1},
                                             {"grad_clip_norm", 1.0},
                                             {"batch_size", std::int64_t{64}}};
  // As the driver parses it: the fuzzer starts from specs of unlike values, not defaults.
  const auto spec = packtune::spec::parse_trial_spec(config, "seed");
  proto::Hello hello;
  hello.host = "node-7";
  hello.pid = 4242;
  hello.local_index = 1;
  hello.node_id = 1;
  hello.threads = 2;
  proto::Welcome welcome;
  welcome.actor_id = 3;
  welcome.spec.data =
      R"({"format":"idx","task":"classification","name":"fashion-mnist","dir":"/usr/share/datasets/fashion-mnist",)"
      R"("train_size":60000,"validation_size":10000,"normalize":true,"augment":{"crop_padding":0,"flip":false,)"
      R"("per_trial":true}})";
  welcome.spec.checkpoint_dir = "/runs/x/checkpoints";
  welcome.spec.store_token = "0123456789abcdef";
  proto::Assign assign;
  assign.trial = 17;
  assign.config = config;
  assign.budget = 2.5;
  assign.seed = 99;
  assign.resume_from = {"/runs/x/checkpoints/trial-17-budget-0.5.h5"};
  assign.max_fused = 4;
  assign.unit = "u7";
  assign.spec = spec;
  proto::NodeHello node;
  node.host = "dgx-3";
  node.cores = 224;
  node.memory_bytes = std::int64_t{2} << 40;
  node.devices.assign(8, {"NVIDIA H200", std::int64_t{141} << 30});
  node.actors = 8;
  return {hello,
          welcome,
          proto::Reject{"protocol version 3 is not this driver's 4"},
          proto::Ready{"cuda:1", std::int64_t{80} << 30, true, std::int64_t{1} << 30},
          assign,
          proto::Stop{8},
          proto::Report{17, 1.5, {{"val_accuracy", 0.875}, {"val_loss", 0.31}}, true, 12.5,
                        "/runs/x/checkpoints/trial-17-budget-1.5.h5", 0.5, 4},
          proto::TrialFailed{3, "out of memory"},
          proto::ActorFailed{"no data"},
          proto::Heartbeat{},
          proto::Shutdown{},
          proto::Measured{"mlp-784-256-10", 4, std::int64_t{300} << 20},
          proto::OutOfMemory{{1, 2, 3}, "CUDA out of memory"},
          proto::Profile{"mlp-784-256-10", config, 64, spec},
          proto::Profiled{"mlp-784-256-10", "cuda:0", {1, 2, 4}, {1e-3, 1.1e-3, 1.3e-3}, ""},
          node,
          proto::NodeWelcome{proto::kProtocolVersion, 3, 0.5, 60},
          proto::ActorExited{1, 9001, "killed by signal 9", true},
          proto::FetchChunk{5, "trial-17-budget-1.5.h5", 1 << 20, 1 << 20},
          proto::Chunk{5, 1 << 20, 3 << 20, ""},
          proto::Offer{6, "trial-17-budget-1.5.h5", 3 << 20},
          proto::Stored{6, "/runs/x/checkpoints/trial-17-budget-1.5.h5", ""},
          proto::Test{17, config, 99, {"/runs/x/checkpoints/trial-17-budget-2.5.h5"}, spec},
          proto::Tested{17, 2.5, {{"test_accuracy", 0.8512}, {"test_loss", 0.41}}, ""}};
}

void message_seeds(const fs::path& dir) {
  int n = 0;
  for (const auto& m : messages()) {
    const auto bytes = proto::encode(m);
    // fuzz_message's header: a dealer's frame, then a router's (identity first); a Chunk
    // with its payload frame too.
    write(dir / ("dealer-" + std::to_string(n) + "-" + proto::verb(m)), std::string("\0\0", 2) + bytes);
    write(dir / ("router-" + std::to_string(n) + "-" + proto::verb(m)), std::string("\1\0", 2) + bytes);
    if (std::holds_alternative<proto::Chunk>(m)) write(dir / "router-chunk-payload", std::string("\3\20", 2) + bytes);
    // Behind a node's relay: under an actor's route, and in a bundle with the next verb's.
    write(dir / ("node-" + std::to_string(n) + "-" + proto::verb(m)), std::string("\11\0", 2) + bytes);
    ++n;
  }
  const auto all = messages();
  for (std::size_t i = 0; i + 1 < all.size(); i += 2) {
    proto::NodeBundle bundle;
    bundle.add(std::string("\0\0\0\0\1", 5), proto::encode(all[i]));
    bundle.add(std::string("\0\0\0\0\2", 5), proto::encode(all[i + 1]));
    write(dir / ("bundle-" + std::to_string(i)), std::string("\31\0", 2) + proto::encode(bundle));
  }
}

void handshake_seeds(const fs::path& dir) {
  proto::NodeHello node;
  node.host = "gpu-box";
  node.pid = 77;
  node.cores = 16;
  node.memory_bytes = std::int64_t{64} << 30;
  node.actors = 2;
  proto::Hello first;
  first.host = "gpu-box";
  first.pid = 100;
  first.local_index = 0;
  first.node_id = 1;
  proto::Hello second = first;
  second.pid = 101;
  second.local_index = 1;
  proto::Hello by_hand;
  by_hand.host = "laptop";
  by_hand.pid = 555;

  std::string node_join;
  packtune::fuzz::append_record(node_join, 0, proto::encode(node));
  packtune::fuzz::append_record(node_join, 1, proto::encode(first));
  packtune::fuzz::append_record(node_join, 2, proto::encode(second));
  packtune::fuzz::append_record(node_join, 1, proto::encode(proto::Ready{"cpu", 0, true, std::int64_t{200} << 20}));
  packtune::fuzz::append_record(node_join, 2, proto::encode(proto::Ready{"cpu", 0, true, std::int64_t{200} << 20}));
  packtune::fuzz::append_record(node_join, 1, proto::encode(proto::Measured{"mlp-784-256-10", 2, std::int64_t{90} << 20}));
  packtune::fuzz::append_record(node_join, 0, proto::encode(proto::ActorExited{1, 101, "killed by signal 9", true}));
  write(dir / "node-two-actors", node_join);

  proto::NodeHello gpus = node;
  gpus.devices = {{"NVIDIA H100 80GB HBM3", std::int64_t{80} << 30}, {"NVIDIA H100 80GB HBM3", std::int64_t{80} << 30}};
  std::string gpu_join;
  packtune::fuzz::append_record(gpu_join, 0, proto::encode(gpus));
  packtune::fuzz::append_record(gpu_join, 1, proto::encode(first));
  packtune::fuzz::append_record(gpu_join, 1, proto::encode(proto::Ready{"cuda:0", 0, true, std::int64_t{1} << 30}));
  write(dir / "node-gpus", gpu_join);

  std::string hand;
  packtune::fuzz::append_record(hand, 3, proto::encode(by_hand));
  packtune::fuzz::append_record(hand, 3, proto::encode(proto::Ready{"cpu", std::int64_t{4} << 30, false, 0}));
  packtune::fuzz::append_record(hand, 3, proto::encode(proto::Heartbeat{}));
  packtune::fuzz::append_record(hand, 3, proto::encode(proto::ActorFailed{"no data"}));
  write(dir / "actor-by-hand", hand);

  // A registered actor's report, test answer and checkpoint offer, which the admission rules judge.
  std::string speaks;
  packtune::fuzz::append_record(speaks, 5, proto::encode(by_hand));
  proto::Report report;
  report.trial = 3;
  report.budget = 1.5;
  report.start_budget = 2;
  report.metrics = {{"val_accuracy", 0.81}, {"val_loss", 0.52}, {"train_loss", 0.48}};
  packtune::fuzz::append_record(speaks, 5, proto::encode(report));
  proto::Tested tested;
  tested.trial = 3;
  tested.budget = 1.5;
  tested.metrics = {{"test_accuracy", 0.8}, {"test_loss", 0.55}};
  packtune::fuzz::append_record(speaks, 5, proto::encode(tested));
  packtune::fuzz::append_record(speaks, 5, proto::encode(proto::Offer{3, "trial-3-budget-1.5.h5", 12, "token"}));
  write(dir / "actor-speaks", speaks);

  proto::Hello old = by_hand;
  old.protocol_version = proto::kProtocolVersion - 1;
  std::string refused;
  packtune::fuzz::append_record(refused, 4, proto::encode(old));
  packtune::fuzz::append_record(refused, 4, proto::encode(proto::Ready{"cpu", 0, true, 0}));
  write(dir / "old-version", refused);
}

void config_seeds(const fs::path& dir) {
  const std::string space = R"("space": {"lr": {"type": "loguniform", "low": 1e-4, "high": 3e-2},
    "optimizer": {"type": "choice", "values": ["adam", "sgd", "adamw"]},
    "momentum": {"type": "uniform", "low": 0.5, "high": 0.95},
    "width": {"type": "choice", "values": [128, 256, 512]},
    "depth": {"type": "randint", "low": 1, "high": 3},
    "dropout": {"type": "uniform", "low": 0.0, "high": 0.4}})";
  const std::string data = R"("data": {"name": "fashion-mnist", "dir": "/nonexistent", "train_size": 1024, "validation_size": 256})";
  const std::vector<std::pair<std::string, std::string>> configs{
      {"random", R"({"name": "r", "seed": 1, "metric": "val_accuracy", "mode": "max",
        "budget": {"unit": "epochs", "min": 0.25, "max": 2, "report_every": 0.5},
        "tuner": {"name": "random", "trials": 20}, "actors": 2, "device": "cpu", "max_pack": 4, "fuse": "auto",
        )" + data + R"(, "model": {"family": "mlp", "depth": 2, "batch_size": 128}, )" + space + "}"},
      {"hyperband", R"({"metric": "val_loss", "budget": {"unit": "steps", "min": 10, "max": 810},
        "tuner": {"name": "hyperband", "eta": 3, "trials": 0}, "listen": "tcp://0.0.0.0:5555", "insecure": true,
        "heartbeat_seconds": 0.5, "actor_timeout_seconds": 10, "join_timeout_seconds": 30, "actor_memory": "600MiB",
        "keep_checkpoints": "all", "memory_estimate_scale": 1.5, )" + data + ", " + space + "}"},
      {"asha", R"({"budget": {"min": 1, "max": 27}, "tuner": {"name": "asha", "eta": 3, "s": 1, "trials": 50},
        "device": "cuda:1", "threads_per_actor": 2, "model": {"family": "cnn", "depth": 2, "channels": 16, "kernel": 3,
        "batch_norm": true, "width": 128, "batch_size": 64}, "space": {"lr": {"type": "loguniform", "low": 1e-4, "high": 1e-1}}})"},
      {"async_hyperband", R"({"budget": {"min": 1, "max": 81}, "tuner": {"name": "async_hyperband", "brackets": 2, "trials": 30},
        "fuse": "never", "space": {"weight_decay": {"type": "loguniform", "low": 1e-6, "high": 1e-3}}})"},
      {"sha", R"({"budget": {"min": 1, "max": 9}, "tuner": {"name": "sha", "eta": 3, "trials": 9}, "fuse": false})"},
      {"grid", R"({"tuner": {"name": "grid", "trials": 6}, "space": {"width": {"type": "choice", "values": [64, 128]},
        "activation": {"type": "choice", "values": ["relu", "tanh", "gelu"]}}})"},
  };
  for (const auto& [name, text] : configs) write(dir / (name + ".json"), text);
}

// Every form of `packtune plan --actors`, alone and in lists, and near misses of each.
void actor_group_seeds(const fs::path& dir) {
  const std::vector<std::pair<std::string, std::string>> specs{
      {"count", "4"},
      {"count-size", "1000x16GiB"},
      {"count-device", "8xcuda:3"},
      {"count-device-size", "1000xcuda=16GiB"},
      {"device-size", "cpu=600MiB"},
      {"list", "cpu=600MiB,cuda:0=80GiB,2xcuda=40GiB,3x1.5GB,5,6xcpu"},
      {"most", "1000000x1TiB"},
      {"no-size", "10xcuda="},
      {"no-count", "xcuda=16GiB"},
      {"zero", "0xcuda=1GiB"},
      {"overflow", "99999999999999999999x1GiB"},
      {"device-alone", "cuda"},
  };
  for (const auto& [name, text] : specs) write(dir / name, text);
}

StoredTensor tensor(const std::string& name, std::vector<std::int64_t> shape, TensorType type = TensorType::Float32) {
  StoredTensor t;
  t.name = name;
  t.type = type;
  t.shape = std::move(shape);
  t.bytes = TensorBytes(static_cast<std::size_t>(t.elements()) * packtune::actors::element_size(type));
  for (std::size_t i = 0; i < t.bytes.size(); ++i) t.bytes.data()[i] = static_cast<unsigned char>(i * 37 + 11);
  return t;
}

void checkpoint_seeds(const fs::path& dir) {
  TrialCheckpoint adam;
  adam.trial = 7;
  adam.budget = 1.5;
  adam.step = 42;
  adam.seed = 0xfeedbeef;
  adam.config = {{"lr", 0.01}, {"depth", 1}, {"optimizer", "adam"}};
  adam.metrics = nlohmann::json::array({{{"budget", 1.5}, {"val_loss", 0.5}}});
  adam.optimizer = "adam";
  adam.optimizer_steps = 42;
  adam.model = {tensor("0.weight", {3, 4}), tensor("0.bias", {3}), tensor("1.num_batches_tracked", {}, TensorType::Int64)};
  adam.optimizer_state = {tensor("0.weight/exp_avg", {3, 4}), tensor("0.weight/exp_avg_sq", {3, 4}),
                          tensor("0.bias/exp_avg", {3}), tensor("0.bias/exp_avg_sq", {3})};
  packtune::actors::write_checkpoint((dir / "adam.h5").string(), adam, false);

  TrialCheckpoint sgd;
  sgd.trial = 1;
  sgd.budget = 0.25;
  sgd.optimizer = "sgd";
  sgd.model = {tensor("0.weight", {2, 2}), tensor("empty", {0, 5})};
  sgd.optimizer_state = {tensor("0.weight/momentum_buffer", {2, 2})};
  packtune::actors::write_checkpoint((dir / "sgd.h5").string(), sgd, false);

  TrialCheckpoint bare;
  bare.optimizer = "sgd";
  packtune::actors::write_checkpoint((dir / "bare.h5").string(), bare, false);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: make_seeds DIR\n";
    return 2;
  }
  const fs::path root = argv[1];
  try {
    for (const char* target : {"message", "handshake", "config", "actor_groups", "checkpoint"}) fs::create_directories(root / target);
    message_seeds(root / "message");
    handshake_seeds(root / "handshake");
    config_seeds(root / "config");
    actor_group_seeds(root / "actor_groups");
    checkpoint_seeds(root / "checkpoint");
  } catch (const std::exception& e) {
    std::cerr << "make_seeds: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
