// Hostile bytes on the driver's port, or on an actor's or a node's socket: the frames of one
// ZeroMQ message as the receive functions check them (identity, message, a Chunk's payload
// frame), then the message decoding. Anything a peer sends must decode or be a
// packtune::Error; no other exception may escape (libFuzzer reports it as a crash).
//
// Input: byte 0 chooses the socket (bit 0: a ROUTER, with an identity frame first) and how
// many frames follow the message frame (bits 1-2: 0 to 3, each carrying byte 1 as its size in
// bytes); on a ROUTER, bit 3 makes the identity a node's, with an envelope frame before the
// message frame: a relay's route, or (bit 4) the empty one of a bundle, whose frame the rest
// then is. The rest is the message frame. The seeds (make_seeds) are encoded messages of
// every verb behind such a header, and a bundle of several.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include <zmq.hpp>

#include "packtune/error.hpp"
#include "protocol/node_route.hpp"
#include "protocol/protocol.hpp"
#include "protocol/zmq_channel.hpp"

namespace {

using packtune::protocol::Message;

// A decoded message re-encodes to bytes that decode to the same encoding: what the decoder
// accepted is a message the rest of packtune can handle like any other.
void check_round_trip(const Message& message) {
  const auto bytes = packtune::protocol::encode(message);
  const auto again = packtune::protocol::encode(packtune::protocol::decode(bytes.data(), bytes.size()));
  if (bytes != again) __builtin_trap();
  (void)packtune::protocol::verb(message);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 2) return 0;
  const bool routed = (data[0] & 1) != 0;
  const bool node = routed && (data[0] & 8) != 0;
  const bool bundle = node && (data[0] & 16) != 0;
  const std::size_t extra = (data[0] >> 1) & 3;
  const std::size_t extra_size = data[1];
  const std::size_t header = 2;
  // As receive_frames keeps them: a routed message may carry a node's envelope frame too.
  const std::size_t limit = routed ? 4 : 2;
  std::vector<zmq::message_t> frames;
  std::size_t count = 0;
  auto arrive = [&](const void* bytes, std::size_t n) {
    if (++count <= limit) frames.emplace_back(bytes, n);
  };
  static const std::string node_id = packtune::protocol::NodeRoute::fresh_routing_id();
  if (routed) arrive(node ? node_id.data() : "peer-identity", node ? node_id.size() : 13);
  if (node) arrive("\0\0\0\0\1", bundle ? 0 : 5);
  arrive(data + header, size - header);
  const std::vector<std::uint8_t> payload(extra_size, 0xab);
  for (std::size_t i = 0; i < extra; ++i) arrive(payload.data(), payload.size());
  try {
    if (routed) {
      std::vector<packtune::Routed> out;
      packtune::decode_routed_frames(frames, count, out);
      for (const auto& r : out) check_round_trip(r.message);
    } else {
      auto r = packtune::decode_frames(frames, count);
      check_round_trip(r.message);
    }
  } catch (const packtune::Error&) {
  }
  return 0;
}
