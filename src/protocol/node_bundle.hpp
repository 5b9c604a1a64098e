#pragma once
// Several messages of one node's peers in one frame. A node's actors finish their jobs
// together (a rung's jobs take the same time), and the driver answers them together: one
// frame each way instead of one per message spares both ends a send, a receive and the
// ZeroMQ I/O thread's wake-ups per message, which at 10,000 actors were most of the
// driver's cost (docs/benchmarks.md). On the wire a bundle is the node's routing id, an
// empty envelope frame (no peer of a relay has an empty routing id) and the bundle's
// frame; a message with a payload frame (a checkpoint's Chunk) always travels alone.
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace packtune::protocol {

struct NodeBundle {
  // What one bundle may hold. Every packtune socket drops a peer whose frame is larger than
  // kMaxFrameBytes (2 MiB, zmq_channel.hpp): senders start another bundle before one passes
  // kMaxBytes of messages, and a receiver refuses more than kMaxMessages, which bounds what a
  // hostile peer's 2 MiB can make it decode (a kilobyte of memory per message).
  static constexpr std::size_t kMaxBytes = std::size_t{1} << 20;
  static constexpr std::size_t kMaxMessages = 1024;

  // Each message's route on the node's relay (protocol/node_route.hpp) and its bytes
  // (protocol::encode), in the order they were sent.
  std::vector<std::string> routes;
  std::vector<std::string> messages;
  std::size_t bytes = 0;  // of routes and messages, not sent: what has_room counts

  // As two vectors of strings; load reads each count first and refuses one past
  // kMaxMessages before it makes room for a string.
  template <class Archive>
  void save(Archive& ar) const { ar(routes, messages); }
  template <class Archive>
  void load(Archive& ar);

  std::size_t size() const { return routes.size(); }
  // Whether a message of `message_bytes` may join without passing either limit. An empty
  // bundle takes any message: one too large for a bundle goes alone.
  bool has_room(std::size_t message_bytes) const {
    return size() == 0 || (size() < kMaxMessages && bytes + message_bytes <= kMaxBytes);
  }
  void add(std::string_view route, std::string message) {
    bytes += route.size() + message.size();
    routes.emplace_back(route);
    messages.push_back(std::move(message));
  }
  void clear() {
    routes.clear();
    messages.clear();
    bytes = 0;
  }
};

std::string encode(const NodeBundle& bundle);
// Throws ProtocolError for bytes that are not a bundle: as decode() for a message, and a
// bundle of no messages or more than kMaxMessages, routes and messages of different counts,
// or an empty route.
NodeBundle decode_bundle(const void* data, std::size_t size);

}  // namespace packtune::protocol
