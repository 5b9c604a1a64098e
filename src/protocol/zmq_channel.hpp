#pragma once
// Thin helpers over cppzmq for the protocol: one message = one frame on a DEALER, and
// identity + one frame on the ROUTER. A Chunk carries its file bytes in one more frame, sent
// and received without copying them through the message encoding.
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <zmq.hpp>

#include "protocol/file_transfer.hpp"
#include "protocol/node_bundle.hpp"
#include "protocol/protocol.hpp"

namespace packtune {

// The largest frame any packtune socket accepts (ZMQ_MAXMSGSIZE). libzmq checks a frame's
// declared size before it allocates the frame, and drops a peer that declares more: without
// it, a peer with no key could make the driver buffer 1 GiB per connection before the CURVE
// handshake ended. Sized from the largest legitimate frame, a checkpoint Chunk's bytes
// (TransferOptions::chunk_bytes, 1 MiB), plus 1 MiB for every other message (a trial's
// config, an error text with its backtrace: kilobytes; a node's bundle, at most
// NodeBundle::kMaxBytes of messages) and CURVE's per-frame overhead (tens of bytes). Both ends of a transfer serve at most their own chunk_bytes.
constexpr std::int64_t kMaxFrameBytes = std::int64_t{TransferOptions{}.chunk_bytes} + (std::int64_t{1} << 20);

// Every socket that talks to a peer (the driver's router; the node's, actor's and transfer
// client's dealers) calls this before it binds or connects.
void limit_frames(zmq::socket_t& socket);

void send_message(zmq::socket_t& dealer, const protocol::Message& message);
// Without waiting: false when the peer's pipe is full (it stopped reading) and nothing was
// sent. The driver's router must not block there: every other peer's work would stop for one
// that hangs, and a node's one pipe carries all its actors' messages.
bool send_message(zmq::socket_t& router, const std::string& identity, const protocol::Message& message);
// The same for a message encoded already (protocol::encode).
bool send_encoded(zmq::socket_t& router, const std::string& identity, std::string_view bytes);
// The message and then `payload` as one more frame.
void send_message(zmq::socket_t& dealer, const protocol::Message& message, zmq::message_t& payload);
bool send_message(zmq::socket_t& router, const std::string& identity, const protocol::Message& message,
                  zmq::message_t& payload);
// Several messages to the peers behind one node (protocol/node_bundle.hpp), on the driver's
// router: `node` is the node's routing id. As send_message, false when its pipe is full.
bool send_bundle(zmq::socket_t& router, const std::string& node, const protocol::NodeBundle& bundle);

// A message and its payload frame (empty when it came without one).
struct Received {
  protocol::Message message;
  zmq::message_t payload;
};

// A routed message: the peer's identity too.
struct Routed {
  std::string identity;
  protocol::Message message;
  zmq::message_t payload;
};

// The checks receive_with_payload and RouterInbox::receive make on the frames of one multipart
// message, apart from the socket so that they can be tested and fuzzed without one: `frames`
// holds the first frames (receive keeps at most one more than a message may have, and drains
// the rest), `count` says how many arrived in all. Throw Error on a malformed message. On a
// router one multipart message is one message, or a node's bundle of several.
Received decode_frames(std::vector<zmq::message_t>& frames, std::size_t count);
// Appends the routed message(s) to `out`, which a caller reuses: a Routed holds a
// protocol::Message, a kilobyte and more, and a vector of them made for each message was an
// allocation large enough to make glibc sweep its free lists every time.
void decode_routed_frames(std::vector<zmq::message_t>& frames, std::size_t count, std::vector<Routed>& out);

// Waits up to `timeout_ms` (0: do not wait) for a message. Throws Error on a malformed one.
std::optional<protocol::Message> receive_message(zmq::socket_t& dealer, long timeout_ms);
std::optional<Received> receive_with_payload(zmq::socket_t& dealer, long timeout_ms);

// What a ROUTER receives, message by message: the peer's identity, its message and payload. A
// node's bundle is handed out one message at a time, in the order its peers sent them.
class RouterInbox {
 public:
  // Waits up to `timeout_ms` (0: do not wait) for a message when none is held. Throws Error on
  // a malformed one (a malformed bundle: all of it).
  std::optional<Routed> receive(zmq::socket_t& router, long timeout_ms);

 private:
  std::vector<Routed> held_;  // what the last frame brought, handed out from next_
  std::size_t next_ = 0;
};

// A peer's first exchange with the driver at `driver` (the endpoint `dealer` connected to):
// sends `hello` and waits up to `timeout_seconds` for the answer. A driver at its connection
// cap refuses the connection in its handshake: the peer connects again, less and less often
// (protocol/redial.hpp). Throws Error, naming the driver and the peer ("actor" or "node"), when
// no answer comes, the driver refused every connection, or it refused the peer (Reject).
protocol::Message hello_driver(zmq::socket_t& dealer, const protocol::Message& hello, const std::string& driver,
                               double timeout_seconds, const std::string& peer);
// The same, for an answer that must be `Welcome` (an actor's) or `NodeWelcome` (a node's).
template <class Welcome>
Welcome join_driver(zmq::socket_t& dealer, const protocol::Message& hello, const std::string& driver,
                    double timeout_seconds, const std::string& peer) {
  auto reply = hello_driver(dealer, hello, driver, timeout_seconds, peer);
  if (auto* welcome = std::get_if<Welcome>(&reply)) return std::move(*welcome);
  throw Error(std::string("expected ") + protocol::verb(protocol::Message{Welcome{}}) + " from the driver, got " +
              protocol::verb(reply));
}

}  // namespace packtune
