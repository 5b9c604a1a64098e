// The driver's outbox: messages to a node's actors go at the end of the turn, one frame per
// node, and the node's relay hands each actor its own.
#include "driver/node_outbox.hpp"

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

}  // namespace

TEST_CASE("the outbox holds a node's messages and sends them as one bundle, a lone one as it is") {
  zmq::context_t context(1);
  zmq::socket_t router(context, zmq::socket_type::router);
  router.set(zmq::sockopt::router_mandatory, 1);
  router.bind("inproc://node-outbox-test");
  zmq::socket_t node(context, zmq::socket_type::dealer);
  const auto node_id = NodeRoute::fresh_routing_id();
  node.set(zmq::sockopt::routing_id, node_id);
  node.connect("inproc://node-outbox-test");
  zmq::socket_t other(context, zmq::socket_type::dealer);
  const auto other_id = NodeRoute::fresh_routing_id();
  other.set(zmq::sockopt::routing_id, other_id);
  other.connect("inproc://node-outbox-test");
  for (auto* peer : {&node, &other}) say_as_node(*peer);
  RouterInbox inbox;
  for (int i = 0; i < 2; ++i) REQUIRE(eventually([&] { return inbox.receive(router, 100); }));

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
  zmq::context_t context(1);
  zmq::socket_t router(context, zmq::socket_type::router);
  router.set(zmq::sockopt::linger, 0);
  router.set(zmq::sockopt::router_mandatory, 1);
  router.set(zmq::sockopt::sndhwm, 4);
  router.bind("inproc://node-outbox-full");
  zmq::socket_t node(context, zmq::socket_type::dealer);
  node.set(zmq::sockopt::linger, 0);
  node.set(zmq::sockopt::rcvhwm, 4);
  const auto node_id = NodeRoute::fresh_routing_id();
  node.set(zmq::sockopt::routing_id, node_id);
  node.connect("inproc://node-outbox-full");
  say_as_node(node);
  REQUIRE(eventually([&] { return RouterInbox().receive(router, 100); }));

  const auto actor = NodeRoute::join(node_id, std::string("\0\0\0\0\1", 5));
  NodeOutbox outbox;
  std::vector<std::string> refused;
  int turns = 0;
  for (; refused.empty() && turns < 10000; ++turns) {
    outbox.hold(actor, protocol::Stop{turns});
    outbox.hold(actor, protocol::Stop{-turns});
    refused = outbox.flush(router);
  }
  REQUIRE(refused == std::vector<std::string>{actor});
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
