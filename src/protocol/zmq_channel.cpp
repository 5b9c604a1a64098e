#include "protocol/zmq_channel.hpp"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <optional>
#include <vector>

#include "packtune/error.hpp"
#include "protocol/interrupted.hpp"

namespace packtune {
namespace {

bool wait_readable(zmq::socket_t& socket, long timeout_ms) {
  zmq::pollitem_t item{static_cast<void*>(socket), 0, ZMQ_POLLIN, 0};
  try {
    zmq::poll(&item, 1, std::chrono::milliseconds(timeout_ms));
  } catch (const zmq::error_t& e) {
    // A signal (SIGTERM from scancel, Ctrl-C) interrupts the poll: nothing to read; the
    // caller's loop sees the flag its handler set and stops cleanly.
    if (e.num() == EINTR) return false;
    throw;
  }
  return (item.revents & ZMQ_POLLIN) != 0;
}

// The frames of one multipart message, at most `limit` of them kept; the rest are drained
// so that one malformed message cannot desynchronise the socket.
std::vector<zmq::message_t> receive_frames(zmq::socket_t& socket, std::size_t limit, std::size_t& count) {
  std::vector<zmq::message_t> frames;
  count = 0;
  bool more = true;
  while (more) {
    zmq::message_t frame;
    const auto flags = count == 0 ? zmq::recv_flags::dontwait : zmq::recv_flags::none;
    if (!protocol::retry_interrupted([&] { return socket.recv(frame, flags); })) break;
    more = frame.more();
    if (++count <= limit) frames.push_back(std::move(frame));
  }
  return frames;
}

// A payload frame belongs to a Chunk only; anything else with one is malformed.
Received decode_message_frames(std::vector<zmq::message_t>& frames, std::size_t first, std::size_t count) {
  const std::size_t parts = count - first;
  if (parts < 1 || parts > 2) {
    throw Error("malformed protocol message (" + std::to_string(parts) + " frames after the identity)");
  }
  Received r{protocol::decode(frames[first].data(), frames[first].size()), {}};
  if (parts == 2) {
    if (!std::holds_alternative<protocol::Chunk>(r.message)) {
      throw Error(std::string("malformed protocol message (") + protocol::verb(r.message) + " with a payload frame)");
    }
    r.payload = std::move(frames[first + 1]);
  }
  return r;
}

}  // namespace

void limit_frames(zmq::socket_t& socket) { socket.set(zmq::sockopt::maxmsgsize, kMaxFrameBytes); }

Received decode_frames(std::vector<zmq::message_t>& frames, std::size_t count) {
  return decode_message_frames(frames, 0, count);
}

Routed decode_routed_frames(std::vector<zmq::message_t>& frames, std::size_t count) {
  if (count < 2) throw Error("malformed protocol message (no frame after the identity)");
  auto r = decode_message_frames(frames, 1, count);
  return Routed{frames[0].to_string(), std::move(r.message), std::move(r.payload)};
}

void send_message(zmq::socket_t& dealer, const protocol::Message& message) {
  const auto bytes = protocol::encode(message);
  protocol::retry_interrupted([&] { return dealer.send(zmq::buffer(bytes), zmq::send_flags::none); });
}

void send_message(zmq::socket_t& router, const std::string& identity,
                  const protocol::Message& message) {
  const auto bytes = protocol::encode(message);
  protocol::retry_interrupted([&] { return router.send(zmq::buffer(identity), zmq::send_flags::sndmore); });
  protocol::retry_interrupted([&] { return router.send(zmq::buffer(bytes), zmq::send_flags::none); });
}

void send_message(zmq::socket_t& dealer, const protocol::Message& message, zmq::message_t& payload) {
  const auto bytes = protocol::encode(message);
  protocol::retry_interrupted([&] { return dealer.send(zmq::buffer(bytes), zmq::send_flags::sndmore); });
  protocol::retry_interrupted([&] { return dealer.send(payload, zmq::send_flags::none); });
}

void send_message(zmq::socket_t& router, const std::string& identity, const protocol::Message& message,
                  zmq::message_t& payload) {
  const auto bytes = protocol::encode(message);
  protocol::retry_interrupted([&] { return router.send(zmq::buffer(identity), zmq::send_flags::sndmore); });
  protocol::retry_interrupted([&] { return router.send(zmq::buffer(bytes), zmq::send_flags::sndmore); });
  protocol::retry_interrupted([&] { return router.send(payload, zmq::send_flags::none); });
}

std::optional<protocol::Message> receive_message(zmq::socket_t& dealer, long timeout_ms) {
  auto received = receive_with_payload(dealer, timeout_ms);
  if (!received) return std::nullopt;
  return std::move(received->message);
}

std::optional<Received> receive_with_payload(zmq::socket_t& dealer, long timeout_ms) {
  if (!wait_readable(dealer, timeout_ms)) return std::nullopt;
  std::size_t count = 0;
  auto frames = receive_frames(dealer, 2, count);
  if (count == 0) return std::nullopt;
  return decode_frames(frames, count);
}

std::optional<Routed> receive_routed(zmq::socket_t& router, long timeout_ms) {
  // Without a timeout the non-blocking receive below answers alone: no poll call per message
  // while a busy driver drains its queue.
  if (timeout_ms > 0 && !wait_readable(router, timeout_ms)) return std::nullopt;
  std::size_t count = 0;
  auto frames = receive_frames(router, 3, count);
  if (count == 0) return std::nullopt;
  const int fd = zmq_msg_get(frames.front().handle(), ZMQ_SRCFD);
  auto routed = decode_routed_frames(frames, count);
  routed.source_fd = fd;
  return routed;
}

protocol::Message hello_driver(zmq::socket_t& dealer, const protocol::Message& hello, const std::string& driver,
                               double timeout_seconds, const std::string& peer) {
  using Clock = std::chrono::steady_clock;
  const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                           std::chrono::duration<double>(std::max(0.0, timeout_seconds)));
  std::optional<protocol::Message> reply;
  auto resend = std::chrono::milliseconds(2000);
  while (true) {
    send_message(dealer, hello);
    const auto left =
        std::max(std::chrono::milliseconds(0), std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()));
    reply = receive_message(dealer, static_cast<long>(std::min(left, resend).count()));
    if (reply || left <= resend) break;
    resend = std::min(resend * 2, std::chrono::milliseconds(16000));
  }
  if (!reply) {
    throw Error("no driver answered at " + driver + " within " + std::to_string(static_cast<int>(timeout_seconds)) +
                " s; is `packtune run` listening there? A driver with CURVE keys admits only " + peer +
                "s started with --keys DIR holding an actor key it authorized");
  }
  if (auto* reject = std::get_if<protocol::Reject>(&*reply)) {
    throw Error("the driver refused this " + peer + ": " + reject->reason);
  }
  return std::move(*reply);
}

}  // namespace packtune
