#pragma once
// A node's one connection to the driver: the node's actors, and the node agent
// itself, connect to the relay's ROUTER on this machine (an ipc socket in a folder of mode
// 0700, and inproc for the agent), and the relay forwards every message over its one DEALER
// to the driver, and the driver's answers back by their envelope (protocol/node_route.hpp).
// What its actors send in one turn goes as one bundle (protocol/node_bundle.hpp), and it
// unpacks the driver's bundles. This is ZeroMQ's broker of the extended request-reply pattern,
// pumped by a thread of its own rather than zmq_proxy: over the cap the driver refuses the
// DEALER's connection in its handshake, and the relay must redial (protocol/redial.hpp), where
// zmq_proxy would wait for ever on a pipe that is gone.
//
// What the relay cannot deliver it drops, as a directly connected peer drops what it sends
// while refused: a driver that did not hear an actor for actor_timeout_seconds retires it and
// asks it to rejoin when it is heard again. Checkpoint transfers travel the same way (an
// actor's transfer socket connects here too), with their flow control end to end.
//
// Heartbeats stay on the machine (protocol version 16): while the relay hears the driver, it
// heartbeats each actor that got nothing for heartbeat_seconds itself, and of an actor's own
// heartbeats it passes on only those that come when the driver has heard nothing of that actor
// for a third of actor_timeout_seconds. An actor that hangs still goes silent at the driver,
// which then has the node kill it; a healthy one waiting for work costs the driver a message
// every 20 s (the defaults) rather than two a second.
//
// The hop from an actor to the relay is not encrypted: it never leaves the machine, and only
// this user may open the socket's folder. The DEALER to the driver speaks CURVE with the
// node's keys.
#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include <zmq.hpp>

#include "protocol/node_bundle.hpp"

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
  // Actors' heartbeats kept on the machine so far.
  std::int64_t heartbeats_kept() const { return heartbeats_kept_.load(); }

  // The driver's timing, from its NodeWelcome: until it is set the relay passes every
  // heartbeat on and makes none.
  void set_timing(double heartbeat_seconds, double actor_timeout_seconds);

 private:
  using Clock = std::chrono::steady_clock;
  // A peer of the relay's ROUTER, by its routing id there.
  struct Peer {
    bool actor = false;  // said Hello: a training actor, not a transfer socket or the agent
    bool answered = false;  // the driver answered its last Hello: it may be heartbeated
    Clock::time_point last_up;    // the last message of it the driver got
    Clock::time_point last_down;  // the last message it got
  };

  void run();
  // One message towards the driver, into this turn's bundle unless it has a payload frame;
  // false when none waits.
  bool up(Clock::time_point now);
  // This turn's messages to the driver: one alone, several as a bundle.
  void flush_up(Clock::time_point now);
  bool down(Clock::time_point now);  // one message, or one bundle, to the actors
  void pass_down(const std::string& routing_id, std::vector<zmq::message_t>& frames, Clock::time_point now);
  void heartbeat_actors(Clock::time_point now);

  zmq::socket_t frontend_;  // ROUTER: the actors and the agent
  zmq::socket_t backend_;   // DEALER: the driver
  std::string driver_;
  std::string routing_id_;
  std::string folder_;
  std::string actor_endpoint_;
  std::atomic<bool> stop_{false};
  std::atomic<std::int64_t> dropped_{0};
  std::atomic<std::int64_t> heartbeats_kept_{0};
  std::atomic<double> heartbeat_seconds_{0};      // 0: not known yet
  std::atomic<double> actor_timeout_seconds_{0};
  std::map<std::string, Peer> peers_;  // the relay's thread only
  protocol::NodeBundle up_;             // this turn's messages to the driver, not sent yet
  Clock::time_point driver_heard_;
  Clock::time_point next_heartbeats_;
  std::thread thread_;
};

}  // namespace packtune
