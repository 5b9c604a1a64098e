#include "bench/load_bench/link.hpp"

#include "protocol/node_route.hpp"
#include "protocol/zmq_channel.hpp"

namespace packtune::bench {

Link::Link(zmq::context_t& context, bool is_node) : socket(context, zmq::socket_type::dealer), node(is_node) {
  socket.set(zmq::sockopt::linger, 0);
  if (node) {
    socket.set(zmq::sockopt::routing_id, protocol::NodeRoute::fresh_routing_id());
    // As the relay's: a machine's actors together outrun libzmq's default of 1,000 messages.
    socket.set(zmq::sockopt::sndhwm, 0);
    socket.set(zmq::sockopt::rcvhwm, 0);
  }
}

std::string envelope_of(int slot) {
  const auto n = static_cast<std::uint32_t>(slot + 1);
  std::string out(5, '\0');
  for (int b = 0; b < 4; ++b) out[1 + b] = static_cast<char>((n >> (8 * b)) & 0xff);
  return out;
}

std::optional<int> slot_of(const std::string& envelope) {
  if (envelope.size() != 5 || envelope[0] != '\0') return std::nullopt;
  std::uint32_t n = 0;
  for (int b = 0; b < 4; ++b) n |= static_cast<std::uint32_t>(static_cast<unsigned char>(envelope[1 + b])) << (8 * b);
  return static_cast<int>(n) - 1;
}

bool try_send(Link& link, const std::string& envelope, const protocol::Message& message) {
  const auto bytes = protocol::encode(message);
  if (!link.node) return link.socket.send(zmq::buffer(bytes), zmq::send_flags::dontwait).has_value();
  if (!link.socket.send(zmq::buffer(envelope), zmq::send_flags::sndmore | zmq::send_flags::dontwait)) return false;
  link.socket.send(zmq::buffer(bytes), zmq::send_flags::none);
  return true;
}

void send_on(Link& link, const std::string& envelope, const protocol::Message& message) {
  if (!link.node) {
    send_message(link.socket, message);
    return;
  }
  auto bytes = protocol::encode(message);
  // As a relay does: a full bundle goes before the next begins.
  if (!link.held.has_room(envelope.size() + bytes.size())) flush_held(link);
  link.held.add(envelope, std::move(bytes));
}

bool flush_held(Link& link) {
  if (link.held.size() == 0) return false;
  // With no high-water mark, only a refused connection takes nothing: dropped, as the relay does.
  const auto first = zmq::send_flags::sndmore | zmq::send_flags::dontwait;
  if (link.held.size() == 1) {
    if (link.socket.send(zmq::buffer(link.held.routes[0]), first)) {
      link.socket.send(zmq::buffer(link.held.messages[0]), zmq::send_flags::none);
    }
  } else if (link.socket.send(zmq::const_buffer(nullptr, 0), first)) {
    link.socket.send(zmq::buffer(protocol::encode(link.held)), zmq::send_flags::none);
  }
  link.held.clear();
  return true;
}

std::vector<Delivery> receive_on(Link& link) {
  std::vector<Delivery> out;
  zmq::message_t frame;
  if (!link.socket.recv(frame, zmq::recv_flags::dontwait)) return out;
  std::string envelope;
  if (link.node) {
    envelope = frame.to_string();
    if (!frame.more() || !link.socket.recv(frame, zmq::recv_flags::dontwait)) {
      throw Error("the driver sent a node an envelope without a message");
    }
  }
  zmq::message_t payload;  // a payload frame belongs to checkpoint transfers only
  for (bool more = frame.more(); more && link.socket.recv(payload, zmq::recv_flags::dontwait);) more = payload.more();
  if (link.node && envelope.empty()) {
    auto bundle = protocol::decode_bundle(frame.data(), frame.size());
    for (std::size_t i = 0; i < bundle.size(); ++i) {
      const auto& bytes = bundle.messages[i];
      out.push_back({std::move(bundle.routes[i]), protocol::decode(bytes.data(), bytes.size())});
    }
    return out;
  }
  out.push_back({std::move(envelope), protocol::decode(frame.data(), frame.size())});
  return out;
}

}  // namespace packtune::bench
