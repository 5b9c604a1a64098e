#include <catch2/catch.hpp>

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

  auto nw = round_trip(NodeWelcome{kProtocolVersion, 3, 0.5});
  CHECK(nw.node_id == 3);
  CHECK(nw.heartbeat_seconds == 0.5);

  auto exited = round_trip(ActorExited{1, 9001, "killed by signal 9", true});
  CHECK(exited.local_index == 1);
  CHECK(exited.pid == 9001);
  CHECK(exited.how == "killed by signal 9");
  CHECK(exited.restarting);
  CHECK(std::string(verb(Message{ActorExited{}})) == "ActorExited");
  CHECK(std::string(verb(Message{NodeHello{}})) == "NodeHello");

  Welcome welcome;
  welcome.actor_id = 5;
  welcome.spec.data_dir = "/data";
  welcome.spec.train_size = 1000;
  welcome.spec.report_every = 0.25;
  welcome.spec.data_seed = 1ULL << 60;
  auto w = round_trip(welcome);
  CHECK(w.actor_id == 5);
  CHECK(w.spec.data_dir == "/data");
  CHECK(w.spec.train_size == 1000);
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
  auto a = round_trip(assign);
  CHECK(a.trial == 17);
  CHECK(a.config == assign.config);
  CHECK(a.budget == 2.5);
  CHECK(a.unit == "u7");
  CHECK_FALSE(a.checkpoint);

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
  Profiled profiled{"mlp-256", "cuda:0", {1, 2, 4}, {1e-3, 1.1e-3, 1.3e-3}, ""};
  auto q = round_trip(profiled);
  CHECK(q.members == profiled.members);
  CHECK(q.seconds == profiled.seconds);
  CHECK(q.device == "cuda:0");

  CHECK(round_trip(TrialFailed{3, "out of memory"}).message == "out of memory");
  CHECK(round_trip(Reject{"version"}).reason == "version");
  CHECK(round_trip(Ready{"cuda:1"}).device == "cuda:1");
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
