#pragma once
// Thin helpers over cppzmq for the protocol: one message = one frame on a DEALER, and
// identity + one frame on the ROUTER.
#include <optional>
#include <string>
#include <utility>

#include <zmq.hpp>

#include "protocol/protocol.hpp"

namespace packtune {

void send_message(zmq::socket_t& dealer, const protocol::Message& message);
void send_message(zmq::socket_t& router, const std::string& identity,
                  const protocol::Message& message);

// Waits up to `timeout_ms` (0: do not wait) for a message. Throws Error on a malformed one.
std::optional<protocol::Message> receive_message(zmq::socket_t& dealer, long timeout_ms);
// On a ROUTER: the peer's identity and its message.
std::optional<std::pair<std::string, protocol::Message>> receive_routed(zmq::socket_t& router,
                                                                       long timeout_ms);

}  // namespace packtune
