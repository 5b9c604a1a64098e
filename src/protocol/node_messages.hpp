#pragma once
// The protocol's messages between the driver and a node agent (`packtune node`): the machine
// and the actors it starts, their exits, and the driver's request to kill one that hangs.
#include <cstdint>
#include <string>
#include <vector>

#include "protocol/protocol_version.hpp"

namespace packtune::protocol {

// One device of a node: its name as the node knows it ("NVIDIA H100 80GB HBM3", or the
// CUDA_VISIBLE_DEVICES entry when nothing better is known) and its memory (0: unknown).
struct NodeDevice {
  std::string name;
  std::int64_t memory_bytes = 0;

  template <class Archive>
  void serialize(Archive& ar) { ar(name, memory_bytes); }
};

// node -> driver: the first message of a `packtune node`: the machine and the actors it will
// start (one per device in `devices`, or `actors` CPU actors when `devices` is empty).
struct NodeHello {
  std::uint32_t protocol_version = kProtocolVersion;
  std::string host;
  std::int64_t pid = 0;
  std::int32_t cores = 0;
  std::int64_t memory_bytes = 0;
  std::vector<NodeDevice> devices;
  std::int32_t actors = 0;
  // The id a driver gave this node before, when it joins again (Rejoin), else -1: a resumed
  // driver gives it back, so that its actors' Hello (which says it) names this node.
  std::int32_t node_id = -1;

  template <class Archive>
  void serialize(Archive& ar) { ar(protocol_version, host, pid, cores, memory_bytes, devices, actors, node_id); }
};

// driver -> node: accepted; its actors say `node_id` in their Hello. The node heartbeats
// every `heartbeat_seconds` (or a Reject: the node exits). Its relay heartbeats the node's
// actors itself, and passes on one of an actor's heartbeats only when the driver has heard
// nothing of that actor for a third of `actor_timeout_seconds` (node/node_relay.hpp).
struct NodeWelcome {
  std::uint32_t protocol_version = kProtocolVersion;
  std::int32_t node_id = 0;
  double heartbeat_seconds = 1;
  double actor_timeout_seconds = 60;

  template <class Archive>
  void serialize(Archive& ar) { ar(protocol_version, node_id, heartbeat_seconds, actor_timeout_seconds); }
};

// node -> driver: the actor process of slot `local_index` (process `pid`) ended, `how`
// ("exited with code 3", "killed by signal 9"); `restarting`: the node starts it again,
// else the slot is given up. The driver retires that actor at once.
struct ActorExited {
  std::int32_t local_index = -1;
  std::int64_t pid = 0;
  std::string how;
  bool restarting = false;
  bool input_error = false;  // exited with code 2: bad input, not a crash

  template <class Archive>
  void serialize(Archive& ar) { ar(local_index, pid, how, restarting, input_error); }
};

// driver -> node: the actor of slot `local_index` (process `pid`) was silent past
// actor_timeout_seconds while its node was not: it hangs (stopped, or stuck in a plugin). The
// node kills that process, and restarts the slot as after a crash. A pid the slot no longer
// runs (it restarted since) is left alone.
struct KillActor {
  std::int32_t local_index = -1;
  std::int64_t pid = 0;
  std::string reason;

  template <class Archive>
  void serialize(Archive& ar) { ar(local_index, pid, reason); }
};

}  // namespace packtune::protocol
