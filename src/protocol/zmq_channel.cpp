#include "protocol/zmq_channel.hpp"

#include <vector>

#include "packtune/error.hpp"

namespace packtune {
namespace {

bool wait_readable(zmq::socket_t& socket, long timeout_ms) {
  zmq::pollitem_t item{static_cast<void*>(socket), 0, ZMQ_POLLIN, 0};
  zmq::poll(&item, 1, std::chrono::milliseconds(timeout_ms));
  return (item.revents & ZMQ_POLLIN) != 0;
}

}  // namespace

void send_message(zmq::socket_t& dealer, const protocol::Message& message) {
  const auto bytes = protocol::encode(message);
  dealer.send(zmq::buffer(bytes), zmq::send_flags::none);
}

void send_message(zmq::socket_t& router, const std::string& identity,
                  const protocol::Message& message) {
  const auto bytes = protocol::encode(message);
  router.send(zmq::buffer(identity), zmq::send_flags::sndmore);
  router.send(zmq::buffer(bytes), zmq::send_flags::none);
}

std::optional<protocol::Message> receive_message(zmq::socket_t& dealer, long timeout_ms) {
  if (!wait_readable(dealer, timeout_ms)) return std::nullopt;
  zmq::message_t frame;
  if (!dealer.recv(frame, zmq::recv_flags::dontwait)) return std::nullopt;
  // A DEALER never gets more than one frame from our ROUTER; drain any extra ones.
  while (frame.more()) {
    zmq::message_t extra;
    (void)dealer.recv(extra, zmq::recv_flags::none);
    if (!extra.more()) throw Error("malformed protocol message (more than one frame)");
  }
  return protocol::decode(frame.data(), frame.size());
}

std::optional<std::pair<std::string, protocol::Message>> receive_routed(zmq::socket_t& router,
                                                                       long timeout_ms) {
  if (!wait_readable(router, timeout_ms)) return std::nullopt;
  std::vector<zmq::message_t> frames;
  do {
    zmq::message_t frame;
    if (!router.recv(frame, zmq::recv_flags::dontwait)) break;
    frames.push_back(std::move(frame));
  } while (frames.back().more());
  if (frames.size() != 2) {
    throw Error("malformed protocol message (" + std::to_string(frames.size()) +
                " frames, expected identity + 1)");
  }
  return std::make_pair(frames[0].to_string(), protocol::decode(frames[1].data(), frames[1].size()));
}

}  // namespace packtune
