#include <catch2/catch.hpp>

#include <chrono>
#include <optional>
#include <set>
#include <string>

#include <zmq.hpp>

#include "../../eventually.hpp"
#include "packtune/error.hpp"
#include "protocol/node_route.hpp"
#include "protocol/zmq_channel.hpp"

using namespace packtune;
using packtune::protocol::NodeRoute;
using packtune::testing::eventually;

TEST_CASE("a node's routing id is told apart from any libzmq makes, and splits back into its frames") {
  const auto id = NodeRoute::fresh_routing_id();
  CHECK(NodeRoute::is_node(id));
  CHECK(id != NodeRoute::fresh_routing_id());
  CHECK_FALSE(NodeRoute::is_node(std::string("\0\x12\x34\x56\x78", 5)));  // libzmq's own: a zero byte first
  CHECK_FALSE(NodeRoute::is_node("node:"));
  CHECK_FALSE(NodeRoute::split(std::string("\0\x12\x34\x56\x78", 5)).has_value());

  const std::string actor("\0\0\0\0\x07", 5);
  const auto joined = NodeRoute::join(id, actor);
  const auto split = NodeRoute::split(joined);
  REQUIRE(split.has_value());
  CHECK(split->first == id);
  CHECK(split->second == actor);
}

TEST_CASE("the driver's router sees each actor behind a node as a peer of its own, and answers it by its envelope") {
  zmq::context_t context(1);
  zmq::socket_t router(context, zmq::socket_type::router);
  router.set(zmq::sockopt::router_mandatory, 1);
  router.bind("inproc://node-route-test");
  zmq::socket_t node(context, zmq::socket_type::dealer);
  const auto node_id = NodeRoute::fresh_routing_id();
  node.set(zmq::sockopt::routing_id, node_id);
  node.connect("inproc://node-route-test");
  zmq::socket_t direct(context, zmq::socket_type::dealer);
  direct.connect("inproc://node-route-test");

  const auto encoded = protocol::encode(protocol::Heartbeat{});
  for (const std::string envelope : {std::string("\0\0\0\0\1", 5), std::string("\0\0\0\0\2", 5)}) {
    node.send(zmq::buffer(envelope), zmq::send_flags::sndmore);
    node.send(zmq::buffer(encoded), zmq::send_flags::none);
  }
  send_message(direct, protocol::Heartbeat{});

  std::set<std::string> identities;
  for (int i = 0; i < 3; ++i) {
    auto routed = eventually([&] { return RouterInbox().receive(router, 100); });
    REQUIRE(routed.has_value());
    CHECK(std::holds_alternative<protocol::Heartbeat>(routed->message));
    identities.insert(routed->identity);
  }
  REQUIRE(identities.size() == 3);
  CHECK(identities.count(NodeRoute::join(node_id, std::string("\0\0\0\0\1", 5))) == 1);
  CHECK(identities.count(NodeRoute::join(node_id, std::string("\0\0\0\0\2", 5))) == 1);

  // The answer to the second actor carries its envelope; the direct peer's carries none.
  send_message(router, NodeRoute::join(node_id, std::string("\0\0\0\0\2", 5)), protocol::Shutdown{});
  zmq::message_t envelope, body;
  REQUIRE(eventually([&] { return node.recv(envelope, zmq::recv_flags::dontwait); }));
  CHECK(envelope.to_string() == std::string("\0\0\0\0\2", 5));
  REQUIRE(envelope.more());
  REQUIRE(node.recv(body, zmq::recv_flags::none));
  CHECK(std::holds_alternative<protocol::Shutdown>(protocol::decode(body.data(), body.size())));
  for (const auto& identity : identities) {
    if (!NodeRoute::split(identity)) send_message(router, identity, protocol::Shutdown{});
  }
  auto answer = eventually([&] { return receive_message(direct, 100); });
  REQUIRE(answer.has_value());
  CHECK(std::holds_alternative<protocol::Shutdown>(*answer));

  // A node's message with no frame after its envelope is malformed, not a crash.
  node.send(zmq::buffer(std::string("\0\0\0\0\1", 5)), zmq::send_flags::none);
  CHECK_THROWS_AS(eventually([&] { return RouterInbox().receive(router, 100); }), Error);
}
