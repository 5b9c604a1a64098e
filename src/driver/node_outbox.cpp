#include "driver/node_outbox.hpp"

#include <spdlog/spdlog.h>

#include "protocol/node_route.hpp"
#include "protocol/zmq_channel.hpp"

namespace packtune {

bool NodeOutbox::hold(const std::string& identity, const protocol::Message& message) {
  const auto route = protocol::NodeRoute::split(identity);
  if (!route) return false;
  auto& held = held_[std::string(route->first)];
  if (held.bundle.size() == 0) {
    order_.emplace_back(route->first);
    held.first = identity;
  }
  held.bundle.add(route->second, protocol::encode(message));
  return true;
}

std::vector<std::string> NodeOutbox::flush(zmq::socket_t& router) {
  std::vector<std::string> refused;
  for (const auto& node : order_) {
    auto& held = held_.at(node);
    try {
      const bool sent = held.bundle.size() == 1 ? send_encoded(router, held.first, held.bundle.messages[0])
                                                : send_bundle(router, node, held.bundle);
      if (!sent) refused.push_back(held.first);
    } catch (const zmq::error_t& e) {
      // EHOSTUNREACH: the node is gone; the heartbeat check will retire its actors.
      spdlog::debug("cannot send to node {}: {}", held.first, e.what());
    }
    // Kept, emptied: its vectors' room serves the node's next turn.
    held.bundle.clear();
  }
  order_.clear();
  return refused;
}

}  // namespace packtune
