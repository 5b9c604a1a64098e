#include "driver/node_outbox.hpp"

#include <set>

#include <spdlog/spdlog.h>

#include "protocol/node_route.hpp"
#include "protocol/zmq_channel.hpp"

namespace packtune {

bool NodeOutbox::hold(const std::string& identity, const protocol::Message& message) {
  const auto route = protocol::NodeRoute::split(identity);
  if (!route) return false;
  key_.assign(route->first);  // reused: a node's routing id is past the short-string buffer
  auto& held = held_[key_];
  if (held.used == 0) {
    order_.emplace_back(route->first);
    held.first = identity;
  }
  auto bytes = protocol::encode(message);
  if (held.used == 0 || !held.bundles[held.used - 1].has_room(route->second.size() + bytes.size())) {
    if (held.used == held.bundles.size()) held.bundles.emplace_back();
    ++held.used;
  }
  held.bundles[held.used - 1].add(route->second, std::move(bytes));
  return true;
}

std::vector<std::string> NodeOutbox::flush(zmq::socket_t& router) {
  std::vector<std::string> refused;
  for (const auto& node : order_) {
    auto& held = held_.at(node);
    for (std::size_t b = 0; b < held.used; ++b) {
      auto& bundle = held.bundles[b];
      try {
        const bool lone = held.used == 1 && bundle.size() == 1;
        const bool sent = lone ? send_encoded(router, held.first, bundle.messages[0]) : send_bundle(router, node, bundle);
        if (!sent) {
          // A bundle is refused whole, and the rest of the node's turn after it.
          std::set<std::string> routes;
          for (std::size_t r = b; r < held.used; ++r) routes.insert(held.bundles[r].routes.begin(), held.bundles[r].routes.end());
          for (const auto& r : routes) refused.push_back(protocol::NodeRoute::join(node, r));
          break;
        }
      } catch (const zmq::error_t& e) {
        // EHOSTUNREACH: the node is gone; the heartbeat check will retire its actors.
        spdlog::debug("cannot send to node {}: {}", held.first, e.what());
        break;
      }
    }
    for (std::size_t b = 0; b < held.used; ++b) held.bundles[b].clear();
    held.used = 0;
  }
  order_.clear();
  return refused;
}

}  // namespace packtune
