#pragma once
// How a node agent's one connection carries its actors (one connection per machine).
// ZeroMQ's extended request-reply envelope: the node's relay (node/node_relay.hpp) is a ROUTER
// for its actors and a DEALER to the driver, so what an actor sends reaches the driver's ROUTER
// as [node routing id][actor's routing id on the relay][message...], and the driver answers the
// same two frames. The node's DEALER names itself with a routing id of kPrefix and 32 hex
// digits; a peer that connects directly gets one that libzmq makes, which starts with a zero
// byte, so the first frame alone tells whether an envelope frame follows. The driver joins the
// two frames into one identity, a peer of its own in its books: each actor behind a node stays
// an actor there.
#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace packtune::protocol {

class NodeRoute {
 public:
  static constexpr const char* kPrefix = "node:";
  static constexpr std::size_t kRoutingIdBytes = 5 + 32;

  // A fresh routing id for a node's DEALER.
  static std::string fresh_routing_id();
  // Whether a routing id on the driver's ROUTER is a node's, whose messages carry an envelope.
  static bool is_node(const std::string& routing_id);
  // One identity for the driver's books: the node's routing id and the actor's on the relay.
  static std::string join(const std::string& node_routing_id, const std::string& actor_routing_id) {
    return node_routing_id + actor_routing_id;
  }
  // The two frames an identity is sent under, or nothing when it is a direct peer's: views into
  // `identity`, since every message the driver sends asks this, and the heartbeat round asks it
  // of every actor.
  static std::optional<std::pair<std::string_view, std::string_view>> split(std::string_view identity);
  // The connection an identity speaks through: its node's routing id behind a relay, else its own.
  static std::string_view connection(std::string_view identity) {
    const auto route = split(identity);
    return route ? route->first : identity;
  }
};

}  // namespace packtune::protocol
