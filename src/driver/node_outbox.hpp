#pragma once
// The driver's messages to actors behind a node (protocol/node_route.hpp), held for the rest
// of the loop's turn and then sent as one frame per node (protocol/node_bundle.hpp). A turn
// takes a batch of messages and answers them: when a node's actors finish together, their
// next jobs then go in one frame rather than one each. Nothing waits longer than the turn:
// the loop flushes before it waits for the next message, and after its last sends.
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <zmq.hpp>

#include "protocol/node_bundle.hpp"
#include "protocol/protocol.hpp"

namespace packtune {

class NodeOutbox {
 public:
  // Holds `message` for `identity` when that is a peer behind a node, and says so; a direct
  // peer's message the caller sends at once.
  bool hold(const std::string& identity, const protocol::Message& message);
  // Sends what is held, each node's in the order it was held: a lone message as it would go
  // alone, several as bundles within NodeBundle's limits. Returns the identities of every
  // message that a node's full pipe refused (the caller takes them out of service, as for a
  // refused send; they share the node's connection).
  std::vector<std::string> flush(zmq::socket_t& router);
  bool empty() const { return order_.empty(); }

 private:
  struct Held {
    std::string first;  // the identity of its first message, for a lone message's send
    std::vector<protocol::NodeBundle> bundles;  // the first `used` hold this turn's messages
    std::size_t used = 0;
  };
  // By the node's routing id; kept, emptied, between turns: their vectors' room serves the
  // node's next turn.
  std::unordered_map<std::string, Held> held_;
  std::vector<std::string> order_;  // nodes, in the order of their first message this turn
  std::string key_;
};

}  // namespace packtune
