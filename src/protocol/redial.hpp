#pragma once
// A peer's way back to the driver after the driver refused its connection in the handshake
// (the connection cap's ZAP answer, peer_guard.hpp; a key it does not know). libzmq 4.3.4 mostly
// takes a refused handshake as a protocol error and drops the connection's session for good: no
// reconnect, ZMQ_RECONNECT_IVL and ZMQ_RECONNECT_IVL_MAX never apply, and the DEALER is left
// with no outgoing pipe, so that a blocking send would wait for ever. (Now and then, a DEALER's
// monitor shows, it reconnects by itself after 100-200 ms instead, or leaves a pipe to nowhere:
// see drop().) Redial notices that, and
// connects again after an exponential, jittered interval bounded by the heartbeat: a crowd over
// the cap asks the driver a few times a second in all, not each of its members every 100 ms.
//
// The missing pipe is read as ZMQ_EVENTS without ZMQ_POLLOUT. A pipe at its high-water mark
// (1,000 messages the driver has not read, past the kernel's buffers) reads the same: the
// sends of zmq_channel.hpp wait a heartbeat for it to drain before they take it for a refusal.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <random>
#include <string>

#include <zmq.hpp>

namespace packtune::protocol {

class Redial {
 public:
  using Clock = std::chrono::steady_clock;
  // libzmq's own reconnect interval, the first step.
  static constexpr std::chrono::milliseconds kFirst{100};

  Redial(std::string endpoint, std::chrono::milliseconds ceiling)
      : endpoint_(std::move(endpoint)), ceiling_(std::max(ceiling, kFirst)), next_(kFirst),
        random_(std::random_device{}()) {}

  // Whether `socket`'s connection was refused and not dialled again yet.
  static bool refused(zmq::socket_t& socket) { return (socket.get(zmq::sockopt::events) & ZMQ_POLLOUT) == 0; }

  // Call now and then with the socket that connected to the endpoint. True when it has just
  // connected again: what was said before the refusal is lost, say it again.
  bool step(zmq::socket_t& socket, Clock::time_point now) {
    if (!waiting_) {
      if (refused(socket)) drop(socket, now);
      return false;
    }
    if (now < due_) return false;
    waiting_ = false;
    socket.connect(endpoint_);
    return true;
  }

  // Takes the socket's connection for refused, though its pipe is still there, and dials again
  // once the interval has passed. libzmq 4.3.4 leaves the pipe of a session refused right after
  // the connect that made it (beside busy loops, 2 of about 110 runs of tests/src's redial
  // test had their join wait for ever): the peer then sends into it for ever.
  void drop(zmq::socket_t& socket, Clock::time_point now) {
    // The endpoint stays the socket's until disconnected, and a second connect would add a
    // second one.
    try {
      socket.disconnect(endpoint_);
    } catch (const zmq::error_t&) {
    }
    ++refusals_;
    waiting_ = true;
    // Between half the interval and all of it: peers refused together do not come back together.
    std::uniform_int_distribution<std::int64_t> jitter(next_.count() / 2, next_.count());
    due_ = now + std::chrono::milliseconds(jitter(random_));
    next_ = std::min(next_ * 2, ceiling_);
  }

  // The peer was heard (joined): a later refusal starts from kFirst again.
  void heard() { next_ = kFirst; }

  const std::string& endpoint() const { return endpoint_; }
  bool waiting() const { return waiting_; }
  Clock::time_point due() const { return due_; }
  std::int64_t refusals() const { return refusals_; }

 private:
  std::string endpoint_;
  std::chrono::milliseconds ceiling_;
  std::chrono::milliseconds next_;
  std::mt19937_64 random_;
  bool waiting_ = false;
  Clock::time_point due_{};
  std::int64_t refusals_ = 0;
};

}  // namespace packtune::protocol
