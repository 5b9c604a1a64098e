#include <catch2/catch.hpp>

#include <chrono>
#include <filesystem>
#include <set>
#include <string>
#include <thread>

#include <zmq.hpp>

#include "../../eventually.hpp"
#include "node/node_relay.hpp"
#include "protocol/node_route.hpp"
#include "protocol/zmq_channel.hpp"

using namespace packtune;
using packtune::protocol::NodeRoute;
using packtune::testing::eventually;

TEST_CASE("a node's relay carries its agent and its actors over one connection, each a peer of the driver") {
  zmq::context_t context(1);
  zmq::socket_t driver(context, zmq::socket_type::router);
  RouterInbox inbox;  // the relay bundles what comes in one turn
  driver.set(zmq::sockopt::router_mandatory, 1);
  driver.bind("inproc://node-relay-test");
  std::string folder;
  {
    NodeRelay relay(context, "inproc://node-relay-test", nullptr);
    REQUIRE(relay.actor_endpoint().rfind("ipc://", 0) == 0);
    folder = std::filesystem::path(relay.actor_endpoint().substr(6)).parent_path().string();
    // Only this user reaches the actors' unencrypted hop.
    const auto perms = std::filesystem::status(folder).permissions();
    CHECK((perms & (std::filesystem::perms::group_all | std::filesystem::perms::others_all)) ==
          std::filesystem::perms::none);

    zmq::socket_t agent(context, zmq::socket_type::dealer);
    agent.connect(NodeRelay::kAgentEndpoint);
    zmq::socket_t actor_a(context, zmq::socket_type::dealer);
    actor_a.connect(relay.actor_endpoint());
    zmq::socket_t actor_b(context, zmq::socket_type::dealer);
    actor_b.connect(relay.actor_endpoint());

    protocol::NodeHello node_hello;
    node_hello.host = "n";
    send_message(agent, node_hello);
    protocol::Hello hello;
    hello.local_index = 0;
    send_message(actor_a, hello);
    hello.local_index = 1;
    send_message(actor_b, hello);

    std::string agent_id, a_id, b_id;
    for (int i = 0; i < 3; ++i) {
      auto routed = eventually([&] { return inbox.receive(driver, 100); });
      REQUIRE(routed.has_value());
      const auto route = NodeRoute::split(routed->identity);
      REQUIRE(route.has_value());
      CHECK(route->first == relay.routing_id());  // one connection: the node's
      if (std::holds_alternative<protocol::NodeHello>(routed->message)) agent_id = routed->identity;
      if (auto* h = std::get_if<protocol::Hello>(&routed->message)) (h->local_index == 0 ? a_id : b_id) = routed->identity;
    }
    REQUIRE(!agent_id.empty());
    REQUIRE(!a_id.empty());
    REQUIRE(!b_id.empty());
    CHECK(std::set<std::string>{agent_id, a_id, b_id}.size() == 3);

    // Each answer reaches only the one it is addressed to, a checkpoint chunk's payload with it.
    send_message(driver, b_id, protocol::Shutdown{});
    zmq::message_t payload(std::string(1000, 'x'));
    send_message(driver, a_id, protocol::Chunk{}, payload);
    send_message(driver, agent_id, protocol::NodeWelcome{});
    auto to_b = eventually([&] { return receive_message(actor_b, 100); });
    REQUIRE(to_b.has_value());
    CHECK(std::holds_alternative<protocol::Shutdown>(*to_b));
    auto to_a = eventually([&] { return receive_with_payload(actor_a, 100); });
    REQUIRE(to_a.has_value());
    CHECK(std::holds_alternative<protocol::Chunk>(to_a->message));
    CHECK(to_a->payload.size() == 1000);
    auto to_agent = eventually([&] { return receive_message(agent, 100); });
    REQUIRE(to_agent.has_value());
    CHECK(std::holds_alternative<protocol::NodeWelcome>(*to_agent));
    CHECK_FALSE(receive_message(actor_a, 0).has_value());
    CHECK_FALSE(receive_message(agent, 0).has_value());

    // An actor gone from the relay: what comes for it is dropped and counted, and the rest flows.
    actor_b.close();
    const auto dropped_before = relay.dropped();
    auto gone = eventually([&]() -> std::optional<bool> {
      send_message(driver, b_id, protocol::Heartbeat{});
      if (relay.dropped() > dropped_before) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
      return std::nullopt;
    });
    CHECK(gone.has_value());
    send_message(driver, a_id, protocol::Heartbeat{});
    auto still = eventually([&] { return receive_message(actor_a, 100); });
    REQUIRE(still.has_value());
    CHECK(std::holds_alternative<protocol::Heartbeat>(*still));
  }
  // The relay's socket and folder go with it.
  CHECK_FALSE(std::filesystem::exists(folder));
}

TEST_CASE("a node's relay keeps its actors' heartbeats on the machine while the driver has heard of them lately") {
  zmq::context_t context(1);
  zmq::socket_t driver(context, zmq::socket_type::router);
  RouterInbox inbox;  // the relay bundles what comes in one turn
  driver.bind("inproc://node-relay-heartbeats");
  NodeRelay relay(context, "inproc://node-relay-heartbeats", nullptr);
  // A heartbeat a few times a second; an actor is retired after 600 s of silence, so the
  // driver needs an actor's heartbeat only 200 s after it last heard of the actor.
  relay.set_timing(0.05, 600);
  zmq::socket_t agent(context, zmq::socket_type::dealer);
  agent.connect(NodeRelay::kAgentEndpoint);
  zmq::socket_t actor(context, zmq::socket_type::dealer);
  actor.connect(relay.actor_endpoint());
  zmq::socket_t transfer(context, zmq::socket_type::dealer);  // an actor's transfer socket: never says Hello
  transfer.connect(relay.actor_endpoint());

  send_message(agent, protocol::NodeHello{});
  auto node_hello = eventually([&] { return inbox.receive(driver, 100); });
  REQUIRE(node_hello.has_value());
  const std::string agent_id = node_hello->identity;
  send_message(driver, agent_id, protocol::NodeWelcome{});
  REQUIRE(eventually([&] { return receive_message(agent, 100); }).has_value());
  // The relay hears the driver, and heartbeats every 50 ms: still, an actor waiting for its
  // Welcome gets nothing before it.
  send_message(actor, protocol::Hello{});
  auto hello = eventually([&] { return inbox.receive(driver, 100); });
  REQUIRE(hello.has_value());
  const std::string actor_id = hello->identity;
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  send_message(driver, actor_id, protocol::Welcome{});
  auto first = eventually([&] { return receive_message(actor, 100); });
  REQUIRE(first.has_value());
  CHECK(std::holds_alternative<protocol::Welcome>(*first));
  // The actor's heartbeat stays; the report after it and the agent's heartbeat go.
  send_message(actor, protocol::Heartbeat{});
  protocol::Report report;
  report.trial = 5;
  send_message(actor, report);
  send_message(agent, protocol::Heartbeat{});
  std::set<std::pair<std::string, std::string>> arrived;  // peer, verb: in any order
  for (int i = 0; i < 2; ++i) {
    auto routed = eventually([&] { return inbox.receive(driver, 100); });
    REQUIRE(routed.has_value());
    arrived.insert({routed->identity, protocol::verb(routed->message)});
  }
  CHECK(arrived == std::set<std::pair<std::string, std::string>>{{actor_id, "Report"}, {agent_id, "Heartbeat"}});
  // The actor's heartbeat went through the relay before its report, on the same pipe.
  CHECK(relay.heartbeats_kept() == 1);

  // Heard from the driver, the relay heartbeats the actor itself, and not its transfer socket.
  send_message(transfer, protocol::FetchChunk{});
  auto fetch = eventually([&] { return inbox.receive(driver, 100); });
  REQUIRE(fetch.has_value());
  send_message(driver, agent_id, protocol::Heartbeat{});
  auto to_agent = eventually([&] { return receive_message(agent, 100); });
  REQUIRE(to_agent.has_value());
  auto to_actor = eventually([&] { return receive_message(actor, 100); });
  REQUIRE(to_actor.has_value());
  CHECK(std::holds_alternative<protocol::Heartbeat>(*to_actor));
  // What the transfer socket gets is only what the driver sends it.
  send_message(driver, fetch->identity, protocol::Chunk{});
  auto to_transfer = eventually([&] { return receive_with_payload(transfer, 100); });
  REQUIRE(to_transfer.has_value());
  CHECK(std::holds_alternative<protocol::Chunk>(to_transfer->message));
}
