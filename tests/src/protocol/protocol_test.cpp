#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "datasets/data_source.hpp"
#include "packtune/error.hpp"
#include "protocol/protocol.hpp"

using namespace packtune::protocol;

namespace {
template <class T>
T round_trip(const T& value) {
  const auto bytes = encode(Message{value});
  auto back = decode(bytes.data(), bytes.size());
  REQUIRE(std::holds_alternative<T>(back));
  return std::get<T>(back);
}
}  // namespace

TEST_CASE("every verb survives a round trip") {
  Hello hello;
  hello.host = "node-7";
  hello.pid = 4242;
  hello.local_index = 3;
  hello.threads = 2;
  auto h = round_trip(hello);
  CHECK(h.protocol_version == kProtocolVersion);
  CHECK(h.host == "node-7");
  CHECK(h.pid == 4242);
  CHECK(h.local_index == 3);
  CHECK(h.node_id == -1);
  hello.node_id = 4;
  CHECK(round_trip(hello).node_id == 4);

  NodeHello node;
  node.host = "gpu-box";
  node.pid = 77;
  node.cores = 64;
  node.memory_bytes = std::int64_t{512} << 30;
  node.devices = {{"NVIDIA H100 80GB HBM3", std::int64_t{80} << 30}, {"GPU-5d1c", 0}};
  node.actors = 2;
  auto n = round_trip(node);
  CHECK(n.protocol_version == kProtocolVersion);
  CHECK(n.host == "gpu-box");
  CHECK(n.pid == 77);
  CHECK(n.cores == 64);
  CHECK(n.memory_bytes == std::int64_t{512} << 30);
  REQUIRE(n.devices.size() == 2);
  CHECK(n.devices[0].name == "NVIDIA H100 80GB HBM3");
  CHECK(n.devices[0].memory_bytes == std::int64_t{80} << 30);
  CHECK(n.devices[1].name == "GPU-5d1c");
  CHECK(n.actors == 2);

  auto nw = round_trip(NodeWelcome{kProtocolVersion, 3, 0.5, 7.5});
  CHECK(nw.actor_timeout_seconds == 7.5);
  CHECK(nw.node_id == 3);
  CHECK(nw.heartbeat_seconds == 0.5);

  auto exited = round_trip(ActorExited{1, 9001, "killed by signal 9", true});
  CHECK_FALSE(exited.input_error);
  CHECK(round_trip(ActorExited{0, 1, "exited with code 2", false, true}).input_error);
  CHECK(exited.local_index == 1);
  CHECK(exited.pid == 9001);
  CHECK(exited.how == "killed by signal 9");
  CHECK(exited.restarting);
  CHECK(std::string(verb(Message{ActorExited{}})) == "ActorExited");
  CHECK(std::string(verb(Message{NodeHello{}})) == "NodeHello");

  Welcome welcome;
  welcome.actor_id = 5;
  packtune::datasets::DataOptions data;
  data.format = packtune::datasets::DataFormat::Npy;
  data.task = packtune::datasets::Task::Regression;
  data.x = "/data/x.npy";
  data.y = "/data/y.npy";
  data.train_size = 1000;
  data.augment.crop_padding = 4;
  welcome.spec.data = nlohmann::json(data).dump();
  welcome.spec.report_every = 0.25;
  welcome.spec.data_seed = 1ULL << 60;
  welcome.spec.deterministic = true;
  auto w = round_trip(welcome);
  CHECK(w.actor_id == 5);
  CHECK(w.spec.deterministic);
  const auto back = nlohmann::json::parse(w.spec.data).get<packtune::datasets::DataOptions>();
  CHECK(back.format == packtune::datasets::DataFormat::Npy);
  CHECK(back.task == packtune::datasets::Task::Regression);
  CHECK(back.x == "/data/x.npy");
  CHECK(back.y == "/data/y.npy");
  CHECK(back.train_size == 1000);
  CHECK(back.augment.crop_padding == 4);
  CHECK(back.normalize);
  CHECK(w.spec.report_every == 0.25);
  CHECK(w.spec.data_seed == 1ULL << 60);

  Assign assign;
  assign.trial = 17;
  assign.config = {{"lr", 0.003}, {"width", std::int64_t{256}}, {"optimizer", std::string("adam")},
                   {"nesterov", true}};
  assign.budget = 2.5;
  assign.seed = 99;
  assign.unit = "u7";
  assign.checkpoint = false;
  assign.park = true;
  assign.exploit_from = 3;
  assign.resume_budget = 1.25;
  assign.more = true;
  auto a = round_trip(assign);
  CHECK(a.trial == 17);
  CHECK(a.config == assign.config);
  CHECK(a.budget == 2.5);
  CHECK(a.unit == "u7");
  CHECK_FALSE(a.checkpoint);
  CHECK(a.park);
  CHECK(a.exploit_from == 3);
  CHECK(a.resume_budget == 1.25);
  CHECK(a.more);
  // The parsed spec it carries (trial_spec_wire.hpp), every field unlike its default.
  auto& spec = assign.spec;
  spec.model = {"cnn", 3, 64, "gelu", 0.25, 32, 5, false, 2, 3, {{"extra", std::int64_t{4}}}};
  spec.optimizer.name = "rmsprop";
  spec.optimizer.lr = 0.02;
  spec.optimizer.momentum = 0.5;
  spec.optimizer.nesterov = true;
  spec.optimizer.weight_decay = 1e-4;
  spec.optimizer.beta1 = 0.8;
  spec.optimizer.beta2 = 0.95;
  spec.optimizer.alpha = 0.9;
  spec.optimizer.schedule = {"step", 1.5, 2.0, 0.5};
  spec.optimizer.grad_clip_norm = 3;
  spec.batch_size = 96;
  spec.label_smoothing = 0.1;
  const auto carried = round_trip(assign).spec;
  CHECK(carried.model == spec.model);
  CHECK(carried.optimizer.name == "rmsprop");
#define OPTIMIZER_KEY(field, type, default_value, low, high, perturbable, doc) \
  CHECK(carried.optimizer.field == spec.optimizer.field);                         \
  CHECK(carried.optimizer.field != packtune::spec::OptimizerSpec{}.field);
#include "spec/optimizers.def"
  CHECK(carried.optimizer.schedule == spec.optimizer.schedule);
  CHECK(carried.optimizer.grad_clip_norm == 3);
  CHECK(carried.batch_size == 96);
  CHECK(carried.label_smoothing == 0.1);

  Report report{17, 1.5, {{"val_accuracy", 0.875}, {"val_loss", 0.31}}, true, 12.5};
  report.unit_size = 12;
  auto r = round_trip(report);
  CHECK(r.metrics == report.metrics);
  CHECK(r.final);
  CHECK(r.train_seconds == 12.5);
  CHECK(r.unit_size == 12);

  Profile profile{"mlp-256", assign.config, 64};
  auto p = round_trip(profile);
  CHECK(p.key == "mlp-256");
  CHECK(p.config == assign.config);
  CHECK(p.max_members == 64);
  profile.spec = spec;
  CHECK(round_trip(profile).spec.model == spec.model);
  Profiled profiled{"mlp-256", "cuda:0", {1, 2, 4}, {1e-3, 1.1e-3, 1.3e-3}, ""};
  auto q = round_trip(profiled);
  CHECK(q.members == profiled.members);
  CHECK(q.seconds == profiled.seconds);
  CHECK(q.device == "cuda:0");

  CHECK(round_trip(TrialFailed{3, "out of memory"}).message == "out of memory");
  CHECK(round_trip(Reject{"version"}).reason == "version");
  CHECK(round_trip(Ready{"cuda:1"}).device == "cuda:1");
  const Ready with_context{"cuda:0", 1, true, 0, "NVIDIA H200", "LibTorch 2.15.0", "images 1x28x28, 10 classes"};
  const auto context = round_trip(with_context);
  CHECK(context.device_model == "NVIDIA H200");
  CHECK(context.build == "LibTorch 2.15.0");
  CHECK(context.data_context == "images 1x28x28, 10 classes");
  CHECK(round_trip(Stop{8}).trial == 8);
  round_trip(Heartbeat{});
  round_trip(Shutdown{});
}

TEST_CASE("garbage and truncated messages are errors, not crashes") {
  const auto bytes = encode(Message{Report{1, 2, {{"val_loss", 0.5}}, false, 0}});
  CHECK_THROWS_AS(decode(bytes.data(), bytes.size() - 3), packtune::Error);
  CHECK_THROWS_AS(decode(bytes.data(), 0), packtune::Error);
  const std::string noise = "\x01\xff\xff\xff\x7f garbage";
  CHECK_THROWS_AS(decode(noise.data(), noise.size()), packtune::Error);
  const auto extra = bytes + "x";
  CHECK_THROWS_AS(decode(extra.data(), extra.size()), packtune::Error);
}

namespace {
std::string error_of(const std::string& bytes) {
  try {
    decode(bytes.data(), bytes.size());
  } catch (const ProtocolError& e) {
    return e.what();
  }
  return "decoded";
}
}  // namespace

// Found by fuzz/fuzz_message: cereal resized a string to the length the bytes claimed before
// reading it, so these few bytes made the receiver allocate (and zero) a terabyte, or throw
// std::bad_alloc; a length between 1 and 3 GiB was allocated for real.
TEST_CASE("a length beyond the bytes left is refused before anything is allocated") {
  // A Reject whose reason claims 0xff00000029 bytes.
  const std::string reject("\x01\x02\x00\x00\x00\x29\x00\x00\x00\xff\x00\x00\x00protocol version 3 is not this driver's 4", 54);
  CHECK_THAT(error_of(reject), Catch::Contains("a length of 1095216660521 with 41 bytes left"));
  // A FetchChunk whose name claims 0x50000001216 bytes.
  const std::string fetch(
      "\x01\x12\x00\x00\x00\x05\x00\x00\x00\x00\x00\x00\x00\x16\x12\x00\x00\x00\x05\x00\x00\x00\x00\x00\x00\x00\x16"
      "\x00\x00\x00\x00\x00\x00\x00trial-17-budge\x00\x00\x00\x00\x00\x10\x00", 55);
  CHECK_THAT(error_of(fetch), Catch::Contains("a length of 5497558143510 with 34 bytes left"));
  // A vector of devices: each takes at least 16 bytes, so no length can be more than the bytes.
  NodeHello node;
  node.devices = {{"a", 1}};
  auto bytes = encode(Message{node});
  const auto at = bytes.size() - (8 + 8 + 1 + 8 + 4);  // the devices' length, before one device and actors
  bytes[at + 7] = '\x01';                           // 2^56 devices
  CHECK_THAT(error_of(bytes), Catch::Contains("a length of"));
}

TEST_CASE("a bool is 0 or 1: any other byte is refused (loading it into a bool is undefined)") {
  auto bytes = encode(Message{Ready{"cpu", 1 << 20, true, 0}});
  // capacity_shared, then base_bytes and three empty strings (each its 8-byte length)
  const auto at = bytes.size() - 9 - 3 * 8;
  REQUIRE(bytes[at] == '\x01');
  bytes[at] = '\x02';
  CHECK_THAT(error_of(bytes), Catch::Contains("a bool of value 2"));
  bytes[at] = '\x00';
  CHECK(error_of(bytes) == "decoded");
}

// Found by fuzz/fuzz_message under UBSan: an empty vector's data() is null, and the decoder
// passed it to memcpy (undefined even for no bytes).
TEST_CASE("empty vectors decode") {
  const auto back = round_trip(Profiled{"mlp-784-256-10", "cuda:0", {}, {}, "out of memory"});
  CHECK(back.members.empty());
  CHECK(back.seconds.empty());
  CHECK(back.error == "out of memory");
  CHECK_FALSE(back.cut_short);
  CHECK(round_trip(Profiled{"mlp-784-256-10", "cuda:0", {1, 2}, {1e-3, 1.2e-3}, "", true}).cut_short);
  CHECK(round_trip(OutOfMemory{{}, ""}).trials.empty());
}

TEST_CASE("a message written big-endian decodes as the little-endian one") {
  Report report{17, 1.5, {{"val_loss", 0.25}}, true, 3.0};
  report.unit_size = 4;
  const auto little = encode(Message{report});
  // The same message as a big-endian machine's cereal writes it: its flag byte 0, every
  // number's bytes reversed.
  std::string big;
  big += '\x00';
  auto number = [&](const void* p, std::size_t n) {
    const auto* b = static_cast<const char*>(p);
    for (std::size_t i = n; i > 0; --i) big += b[i - 1];
  };
  auto text = [&](const std::string& s) {
    const std::uint64_t n = s.size();
    number(&n, 8);
    big += s;
  };
  const std::int32_t index = 6;
  number(&index, 4);
  number(&report.trial, 8);
  number(&report.budget, 8);
  const std::uint64_t metrics = 1;
  number(&metrics, 8);
  text("val_loss");
  number(&report.metrics["val_loss"], 8);
  big += '\x01';
  number(&report.train_seconds, 8);
  text("");
  number(&report.start_budget, 8);
  number(&report.unit_size, 4);
  text("");      // checkpoint_error
  big += '\x00';  // disk_full
  number(&report.lease, 8);
  REQUIRE(big.size() == little.size());
  auto back = decode(big.data(), big.size());
  REQUIRE(std::holds_alternative<Report>(back));
  CHECK(encode(back) == little);
}

// Found by fuzz/fuzz_handshake: an actor's Measured of 7.7e18 peak bytes for 2 members made the
// memory model's correction so large that the planner's sum of an actor's bytes overflowed
// (signed overflow: undefined behaviour). The driver now refuses sizes no machine has.
TEST_CASE("the driver refuses a measurement no machine can make") {
  const std::string bytes("\x01\x0b\x00\x00\x00\x0e\x00\x00\x00\x00\x00\x00\x00mlp-784-256-10"
                          "\x02\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x6b", 39);
  const auto message = decode(bytes.data(), bytes.size());
  REQUIRE(std::holds_alternative<Measured>(message));
  CHECK_THAT(refusal(std::get<Measured>(message)), Catch::Contains("peak_bytes 7710162562058289152 is out of range"));
  CHECK(refusal(Measured{"mlp", 2, std::int64_t{300} << 20}).empty());
  CHECK_THAT(refusal(Measured{"mlp", 0, 1}), Catch::Contains("members 0"));
  CHECK_THAT(refusal(Measured{"mlp", 1, -1}), Catch::Contains("peak_bytes -1"));
}

TEST_CASE("the driver refuses a first message of another version or with counts out of range") {
  Hello hello;
  hello.host = "laptop";
  CHECK(refusal(hello).empty());
  hello.node_id = 2;
  hello.local_index = 3;
  CHECK(refusal(hello).empty());
  hello.protocol_version = kProtocolVersion + 1;
  CHECK_THAT(refusal(hello), Catch::Contains("protocol version " + std::to_string(kProtocolVersion + 1)));
  hello.protocol_version = kProtocolVersion;
  hello.local_index = -7;
  CHECK_THAT(refusal(hello), Catch::Contains("local_index -7"));

  NodeHello node;
  node.actors = 8;
  node.memory_bytes = std::int64_t{2} << 40;
  node.devices = {{"NVIDIA H200", std::int64_t{141} << 30}};
  CHECK(refusal(node).empty());
  node.actors = kMaxNodeActors + 1;
  CHECK_THAT(refusal(node), Catch::Contains("actors 4097 is out of range"));
  node.actors = 8;
  node.devices[0].memory_bytes = -1;
  CHECK_THAT(refusal(node), Catch::Contains("a device's memory_bytes -1"));
  node.devices[0].memory_bytes = 0;
  node.memory_bytes = kMaxMemoryBytes + 1;
  CHECK_THAT(refusal(node), Catch::Contains("memory_bytes"));

  CHECK(refusal(Ready{"cuda:0", std::int64_t{80} << 30, false, std::int64_t{1} << 30}).empty());
  CHECK_THAT(refusal(Ready{"cpu", -5, true, 0}), Catch::Contains("capacity_bytes -5"));
  CHECK_THAT(refusal(Ready{"cpu", 0, true, std::int64_t{6906755512877674496}}), Catch::Contains("base_bytes"));
  // The profile cache's key is written to the driver's disk: bounded like every peer's string.
  Ready long_context{"cpu", 0, true, 0, std::string(1025, 'x'), "b", "d"};
  CHECK_THAT(refusal(long_context), Catch::Contains("device_model's length 1025"));
  long_context.device_model = std::string(1024, 'x');
  CHECK(refusal(long_context).empty());
  long_context.data_context = std::string(5000, 'x');
  CHECK_THAT(refusal(long_context), Catch::Contains("data_context's length"));
}

TEST_CASE("the verb of a message is its struct name") {
  CHECK(std::string(verb(Message{Assign{}})) == "Assign");
  CHECK(std::string(verb(Message{Shutdown{}})) == "Shutdown");
}

TEST_CASE("a promotion carries its checkpoints and a final report the one it wrote") {
  Welcome welcome;
  welcome.spec.checkpoint_dir = "/runs/x/checkpoints";
  auto round_trip_welcome = round_trip(welcome);
  CHECK(round_trip_welcome.spec.checkpoint_dir == "/runs/x/checkpoints");

  Assign assign;
  assign.trial = 4;
  assign.budget = 3;
  assign.resume_from = {"/runs/x/checkpoints/trial-4-budget-1.h5", "/runs/x/checkpoints/trial-4-budget-0.5.h5"};
  CHECK(round_trip(assign).resume_from == assign.resume_from);

  Report report{4, 3, {{"val_loss", 0.5}}, true, 2.0};
  report.checkpoint = "/runs/x/checkpoints/trial-4-budget-3.h5";
  report.start_budget = 1;
  auto r = round_trip(report);
  CHECK(r.checkpoint == report.checkpoint);
  CHECK(r.start_budget == 1);
}
