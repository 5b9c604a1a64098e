#pragma once
// A node's one connection to the driver (issue 51): the node's actors, and the node agent
// itself, connect to the relay's ROUTER on this machine (an ipc socket in a folder of mode
// 0700, and inproc for the agent), and the relay forwards every message, frames untouched,
// over its one DEALER to the driver, and the driver's answers back by their envelope
// (protocol/node_route.hpp). This is ZeroMQ's broker of the extended request-reply pattern,
// pumped by a thread of its own rather than zmq_proxy: over the cap the driver refuses the
// DEALER's connection in its handshake, and the relay must redial (protocol/redial.hpp), where
// zmq_proxy would wait for ever on a pipe that is gone.
//
// What the relay cannot deliver it drops, as a directly connected peer drops what it sends
// while refused: a driver that did not hear an actor for actor_timeout_seconds retires it and
// asks it to rejoin when it is heard again. Checkpoint transfers travel the same way (an
// actor's transfer socket connects here too), with their flow control end to end.
//
// The hop from an actor to the relay is not encrypted: it never leaves the machine, and only
// this user may open the socket's folder. The DEALER to the driver speaks CURVE with the
// node's keys.
#include <atomic>
#include <cstdint>
#include <string>
#include <thread>

#include <zmq.hpp>

namespace packtune {

struct CurveKeys;

class NodeRelay {
 public:
  // Connects to `driver` (CURVE with `keys` when not null) and binds a fresh ipc socket for
  // the actors; starts the relay's thread. Throws InputError for an endpoint it cannot connect.
  NodeRelay(zmq::context_t& context, const std::string& driver, const CurveKeys* keys);
  // Forwards what the agent and the actors have sent (up to 1 s), stops the thread, removes
  // the socket and its folder; the DEALER lingers 1 s for what is still on its way.
  ~NodeRelay();
  NodeRelay(const NodeRelay&) = delete;
  NodeRelay& operator=(const NodeRelay&) = delete;

  // Where the node's actors connect (`packtune actor --driver`), without keys.
  const std::string& actor_endpoint() const { return actor_endpoint_; }
  // Where the node agent's own socket connects, in the same context.
  static constexpr const char* kAgentEndpoint = "inproc://packtune-node-agent";
  // The node's routing id on the driver's router.
  const std::string& routing_id() const { return routing_id_; }

  // Messages dropped so far: no connection to the driver, or no such actor here any more.
  std::int64_t dropped() const { return dropped_.load(); }

 private:
  void run();

  zmq::socket_t frontend_;  // ROUTER: the actors and the agent
  zmq::socket_t backend_;   // DEALER: the driver
  std::string driver_;
  std::string routing_id_;
  std::string folder_;
  std::string actor_endpoint_;
  std::atomic<bool> stop_{false};
  std::atomic<std::int64_t> dropped_{0};
  std::thread thread_;
};

}  // namespace packtune
