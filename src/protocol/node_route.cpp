#include "protocol/node_route.hpp"

#include "util/random_token.hpp"

namespace packtune::protocol {

std::string NodeRoute::fresh_routing_id() { return kPrefix + util::random_token(); }

bool NodeRoute::is_node(const std::string& routing_id) {
  return routing_id.size() == kRoutingIdBytes && routing_id.compare(0, 5, kPrefix) == 0;
}

std::optional<std::pair<std::string_view, std::string_view>> NodeRoute::split(std::string_view identity) {
  // A direct peer's routing id is libzmq's own, 5 bytes from a zero byte: never this prefix.
  if (identity.size() < kRoutingIdBytes || identity.substr(0, 5) != kPrefix) return std::nullopt;
  return std::make_pair(identity.substr(0, kRoutingIdBytes), identity.substr(kRoutingIdBytes));
}

}  // namespace packtune::protocol
