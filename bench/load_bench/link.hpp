#pragma once
// One connection of the simulated fleet to the driver: a simulated actor's own DEALER, or a
// simulated node's, which carries its actors' messages under the envelope a node's relay puts
// on them (protocol/node_route.hpp, node/node_relay.hpp). The driver sees what real nodes would
// send it; the relay's own hop, from an actor process to its node, is not simulated.
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <zmq.hpp>

#include "bench/load_bench/clock.hpp"
#include "protocol/node_bundle.hpp"
#include "protocol/protocol.hpp"
#include "protocol/redial.hpp"

namespace packtune::bench {

struct Link {
  Link(zmq::context_t& context, bool node);

  zmq::socket_t socket;
  std::optional<protocol::Redial> redial;  // after the driver refused its connection
  bool node = false;
  std::vector<int> actors;  // behind a node: by slot; else the one actor
  // A node's own conversation (NodeHello, its heartbeats) and the driver's answers.
  int node_id = -1;  // NodeWelcome's; -1 before it, and for an actor's own connection
  Clock::time_point last_sent;
  Clock::time_point next_hello;
  Clock::time_point next_redial_check;  // a welcomed node's: once a heartbeat
  std::chrono::milliseconds hello_interval{2000};
  // A node's actors' messages of this turn, sent together as its relay would (flush_held).
  protocol::NodeBundle held;
};

// The envelope of slot `slot` behind a node (-1: the node agent itself), as the relay's ROUTER
// would name its connection: a zero byte, then four.
std::string envelope_of(int slot);
// The slot an envelope names, -1 for the agent's, nullopt for what no simulated peer sent.
std::optional<int> slot_of(const std::string& envelope);

// Sends `message` under `envelope` (a node's link) or as it is (an actor's own), without
// waiting: false when the connection takes nothing now (refused).
bool try_send(Link& link, const std::string& envelope, const protocol::Message& message);
// The same, waiting as a peer's send does for a full pipe (zmq_channel.hpp). On a node's link
// the message is held for flush_held.
void send_on(Link& link, const std::string& envelope, const protocol::Message& message);
// What a node's link holds: one message alone, several as one bundle, as a relay sends them;
// dropped, as a relay drops them, when the connection takes nothing. False when nothing was held.
bool flush_held(Link& link);

struct Delivery {
  std::string envelope;  // empty on an actor's own connection
  protocol::Message message;
};
// The next message the link holds (a bundle's messages, in order), or nothing; a payload
// frame is read and dropped.
std::vector<Delivery> receive_on(Link& link);

}  // namespace packtune::bench
