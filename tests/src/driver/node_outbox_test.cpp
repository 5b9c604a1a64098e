// The driver's outbox: messages to a node's actors go at the end of the turn, one frame per
// node, and the node's relay hands each actor its own.
#include "driver/node_outbox.hpp"

#include <algorithm>
#include <string>
#include <vector>

#include <catch2/catch.hpp>
#include <zmq.hpp>

#include "../../eventually.hpp"
#include "node/node_relay.hpp"
#include "protocol/node_route.hpp"
#include "protocol/zmq_channel.hpp"

using namespace packtune;
using protocol::NodeRoute;
using packtune::testing::eventually;

namespace {

// Every frame of the next multipart message on `socket`, waiting for it.
std::vector<std::string> next_frames(zmq::socket_t& socket) {
  std::vector<std::string> frames;
  zmq::message_t frame;
  REQUIRE(eventually([&] { return socket.recv(frame, zmq::recv_flags::dontwait); }));
  frames.push_back(frame.to_string());
  while (frame.more()) {
    REQUIRE(socket.recv(frame, zmq::recv_flags::none));
    frames.push_back(frame.to_string());
  }
  return frames;
}

// What a node's agent says through its relay: under its route there, so that the router
// learns the node's connection.
void say_as_node(zmq::socket_t& node) {
  node.send(zmq::buffer(std::string("\0\0\0\0\x09", 5)), zmq::send_flags::sndmore);
  node.send(zmq::buffer(protocol::encode(protocol::Heartbeat{})), zmq::send_flags::none);
}

// The driver's router, bound at `endpoint`, and the nodes' connections to it, each introduced.
// A high-water mark `hwm` above 0 bounds the router's queue to a node and the node's own.
struct Router {
  zmq::context_t context{1};
  zmq::socket_t router{context, zmq::socket_type::router};
  std::vector<zmq::socket_t> nodes;
  std::vector<std::string> ids;

  Router(const std::string& endpoint, int node_count, int hwm = 0) {
    router.set(zmq::sockopt::linger, 0);
    router.set(zmq::sockopt::router_mandatory, 1);
    if (hwm > 0) router.set(zmq::sockopt::sndhwm, hwm);
    router.bind(endpoint);
    RouterInbox inbox;
    for (int i = 0; i < node_count; ++i) {
      nodes.emplace_back(context, zmq::socket_type::dealer);
      ids.push_back(NodeRoute::fresh_routing_id());
      nodes.back().set(zmq::sockopt::linger, 0);
      if (hwm > 0) nodes.back().set(zmq::sockopt::rcvhwm, hwm);
      nodes.back().set(zmq::sockopt::routing_id, ids.back());
      nodes.back().connect(endpoint);
      say_as_node(nodes.back());
      REQUIRE(eventually([&] { return inbox.receive(router, 100); }));
    }
  }
};

}  // namespace

TEST_CASE("the outbox holds a node's messages and sends them as one bundle, a lone one as it is") {
  Router r("inproc://node-outbox-test", 2);
  auto& router = r.router;
  auto& node = r.nodes[0];
  auto& other = r.nodes[1];
  const auto& node_id = r.ids[0];
  const auto& other_id = r.ids[1];

  const std::string a("\0\0\0\0\1", 5), b("\0\0\0\0\2", 5);
  NodeOutbox outbox;
  CHECK_FALSE(outbox.hold(std::string("\0\x12\x34\x56\x78", 5), protocol::Shutdown{}));  // a direct peer's
  CHECK(outbox.empty());
  CHECK(outbox.hold(NodeRoute::join(node_id, a), protocol::Stop{1}));
  CHECK(outbox.hold(NodeRoute::join(other_id, b), protocol::Stop{9}));
  CHECK(outbox.hold(NodeRoute::join(node_id, b), protocol::Stop{2}));
  CHECK(outbox.hold(NodeRoute::join(node_id, a), protocol::Stop{3}));
  // Nothing goes before the flush.
  zmq::message_t frame;
  CHECK_FALSE(node.recv(frame, zmq::recv_flags::dontwait));
  CHECK(outbox.flush(router).empty());
  CHECK(outbox.empty());

  const auto bundled = next_frames(node);
  REQUIRE(bundled.size() == 2);
  CHECK(bundled[0].empty());
  const auto bundle = protocol::decode_bundle(bundled[1].data(), bundled[1].size());
  CHECK(bundle.routes == std::vector<std::string>{a, b, a});
  std::vector<tuners::TrialId> trials;
  for (const auto& bytes : bundle.messages) trials.push_back(std::get<protocol::Stop>(protocol::decode(bytes.data(), bytes.size())).trial);
  CHECK(trials == std::vector<tuners::TrialId>{1, 2, 3});
  const auto alone = next_frames(other);
  REQUIRE(alone.size() == 2);
  CHECK(alone[0] == b);
  CHECK(std::get<protocol::Stop>(protocol::decode(alone[1].data(), alone[1].size())).trial == 9);

  // A second turn starts empty.
  CHECK(outbox.hold(NodeRoute::join(node_id, b), protocol::Stop{4}));
  CHECK(outbox.flush(router).empty());
  CHECK(next_frames(node) == std::vector<std::string>{b, protocol::encode(protocol::Stop{4})});
}

TEST_CASE("a node whose pipe is full refuses its bundle whole, and the outbox names it") {
  Router r("inproc://node-outbox-full", 1, 4);
  auto& router = r.router;
  auto& node = r.nodes[0];
  const auto& node_id = r.ids[0];

  const auto actor = NodeRoute::join(node_id, std::string("\0\0\0\0\1", 5));
  const auto other = NodeRoute::join(node_id, std::string("\0\0\0\0\2", 5));
  NodeOutbox outbox;
  std::vector<std::string> refused;
  int turns = 0;
  for (; refused.empty() && turns < 10000; ++turns) {
    outbox.hold(actor, protocol::Stop{turns});
    outbox.hold(other, protocol::Stop{-turns});
    refused = outbox.flush(router);
  }
  // Every actor whose message it held: they all go out of service with their node.
  REQUIRE(refused == std::vector<std::string>{actor, other});
  // Every bundle that went is whole; the refused one left nothing behind.
  for (int i = 0; i + 1 < turns; ++i) {
    const auto frames = next_frames(node);
    REQUIRE(frames.size() == 2);
    CHECK(protocol::decode_bundle(frames[1].data(), frames[1].size()).size() == 2);
  }
  zmq::message_t more;
  CHECK_FALSE(node.recv(more, zmq::recv_flags::dontwait));
}

// Whether the relay bundles its actors' Hellos depends on how many wait when its thread looks;
// either way each reaches the driver as its actor's.
TEST_CASE("a node's relay hands each actor its part of the driver's bundle") {
  zmq::context_t context(1);
  zmq::socket_t driver(context, zmq::socket_type::router);
  driver.set(zmq::sockopt::router_mandatory, 1);
  driver.bind("inproc://node-outbox-relay");
  NodeRelay relay(context, "inproc://node-outbox-relay", nullptr);
  std::vector<zmq::socket_t> actors;
  for (int i = 0; i < 3; ++i) {
    actors.emplace_back(context, zmq::socket_type::dealer);
    actors.back().connect(relay.actor_endpoint());
  }
  RouterInbox inbox;
  std::vector<std::string> identities(3);
  for (int i = 0; i < 3; ++i) {
    protocol::Hello hello;
    hello.local_index = i;
    send_message(actors[static_cast<std::size_t>(i)], hello);
  }
  for (int i = 0; i < 3; ++i) {
    auto routed = eventually([&] { return inbox.receive(driver, 100); });
    REQUIRE(routed);
    const auto index = std::get<protocol::Hello>(routed->message).local_index;
    identities.at(static_cast<std::size_t>(index)) = routed->identity;
  }

  NodeOutbox outbox;
  for (int i = 0; i < 3; ++i) outbox.hold(identities[static_cast<std::size_t>(i)], protocol::Stop{10 + i});
  REQUIRE(outbox.flush(driver).empty());
  for (int i = 0; i < 3; ++i) {
    auto message = eventually([&] { return receive_message(actors[static_cast<std::size_t>(i)], 100); });
    REQUIRE(message);
    CHECK(std::get<protocol::Stop>(*message).trial == 10 + i);
  }
  CHECK(relay.dropped() == 0);
}

TEST_CASE("the outbox splits a node's turn into bundles within their limits, in order") {
  Router r("inproc://node-outbox-split", 1);
  auto& router = r.router;
  auto& node = r.nodes[0];
  const auto& node_id = r.ids[0];

  const std::string first("\0\0\0\0\1", 5), last("\0\0\0\0\2", 5);
  NodeOutbox outbox;
  // Two full bundles, and a third of one message to another actor: a bundle too, under its route.
  const int messages = static_cast<int>(protocol::NodeBundle::kMaxMessages) * 2 + 1;
  for (int i = 0; i < messages; ++i) outbox.hold(NodeRoute::join(node_id, i + 1 < messages ? first : last), protocol::Stop{i});
  REQUIRE(outbox.flush(router).empty());
  std::vector<tuners::TrialId> trials;
  std::vector<std::string> routes;
  while (static_cast<int>(trials.size()) < messages) {
    const auto frames = next_frames(node);
    REQUIRE(frames.size() == 2);
    REQUIRE(frames[0].empty());
    const auto bundle = protocol::decode_bundle(frames[1].data(), frames[1].size());
    CHECK(bundle.size() <= protocol::NodeBundle::kMaxMessages);
    routes.insert(routes.end(), bundle.routes.begin(), bundle.routes.end());
    for (const auto& bytes : bundle.messages) trials.push_back(std::get<protocol::Stop>(protocol::decode(bytes.data(), bytes.size())).trial);
  }
  std::vector<tuners::TrialId> expected(static_cast<std::size_t>(messages));
  for (int i = 0; i < messages; ++i) expected[static_cast<std::size_t>(i)] = i;
  CHECK(trials == expected);
  CHECK(routes.back() == last);
  CHECK(std::count(routes.begin(), routes.end(), first) == messages - 1);
}
