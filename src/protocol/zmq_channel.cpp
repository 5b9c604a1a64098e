#include "protocol/zmq_channel.hpp"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <map>
#include <optional>
#include <vector>

#include "packtune/error.hpp"
#include "protocol/interrupted.hpp"
#include "protocol/node_route.hpp"
#include "protocol/redial.hpp"

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

// The default heartbeat: what bounds a peer's redial interval (the driver names the run's own
// only once joined), and how long a send waits for a full pipe to drain.
const std::chrono::milliseconds kPatience{static_cast<long>(protocol::ExperimentSpec{}.heartbeat_seconds * 1000)};

// The redial state of each DEALER this thread sent or received on (a peer holds one or two,
// each connected to the driver).
protocol::Redial& redial_of(zmq::socket_t& dealer) {
  thread_local std::map<void*, protocol::Redial> redials;
  const auto endpoint = dealer.get(zmq::sockopt::last_endpoint);
  auto it = redials.find(dealer.handle());
  // A socket closed and another opened where it was has a state of its own.
  if (it == redials.end() || (!endpoint.empty() && it->second.endpoint() != endpoint)) {
    it = redials.insert_or_assign(dealer.handle(), protocol::Redial(endpoint, kPatience)).first;
  }
  return it->second;
}

// Sends a message's first frame to the driver (`try_send`: without waiting; the rest of a
// multipart message then goes as it would). A refused connection leaves no pipe to send to,
// where a blocking send would wait for ever: the message goes with the connection, the socket
// redials, and the driver, which never heard of the new connection, answers the peer's next
// message with Rejoin. False when dropped.
template <class TrySend>
bool send_first(zmq::socket_t& dealer, TrySend try_send) {
  if (try_send()) return true;
  while (true) {
    zmq::pollitem_t item{dealer.handle(), 0, ZMQ_POLLOUT, 0};
    protocol::retry_interrupted([&] { return zmq::poll(&item, 1, kPatience); });
    if (try_send()) return true;
    auto& redial = redial_of(dealer);
    if (redial.step(dealer, std::chrono::steady_clock::now())) continue;
    if (redial.waiting()) return false;
  }
}

}  // namespace

void limit_frames(zmq::socket_t& socket) { socket.set(zmq::sockopt::maxmsgsize, kMaxFrameBytes); }

Received decode_frames(std::vector<zmq::message_t>& frames, std::size_t count) {
  return decode_message_frames(frames, 0, count);
}

void decode_routed_frames(std::vector<zmq::message_t>& frames, std::size_t count, std::vector<Routed>& out) {
  if (count < 2) throw Error("malformed protocol message (no frame after the identity)");
  auto identity = frames[0].to_string();
  if (!protocol::NodeRoute::is_node(identity)) {
    auto r = decode_message_frames(frames, 1, count);
    out.push_back(Routed{std::move(identity), std::move(r.message), std::move(r.payload)});
    return;
  }
  // A node's connection: the actor's routing id on the node's relay comes first, or an empty
  // frame before a bundle of several peers' messages.
  if (count < 3) throw Error("malformed protocol message (no frame after a node's envelope)");
  if (frames[1].size() > 0) {
    auto r = decode_message_frames(frames, 2, count);
    out.push_back(Routed{protocol::NodeRoute::join(identity, frames[1].to_string()), std::move(r.message),
                         std::move(r.payload)});
    return;
  }
  if (count != 3) throw Error("malformed protocol message (a bundle with a payload frame)");
  const auto bundle = protocol::decode_bundle(frames[2].data(), frames[2].size());
  // All or nothing: a bundle with one malformed message is refused whole.
  const auto first = out.size();
  try {
    for (std::size_t i = 0; i < bundle.size(); ++i) {
      const auto& bytes = bundle.messages[i];
      out.push_back(Routed{protocol::NodeRoute::join(identity, bundle.routes[i]),
                           protocol::decode(bytes.data(), bytes.size()), {}});
    }
  } catch (...) {
    out.resize(first);
    throw;
  }
}

void send_message(zmq::socket_t& dealer, const protocol::Message& message) {
  const auto bytes = protocol::encode(message);
  send_first(dealer, [&] {
    return protocol::retry_interrupted([&] { return dealer.send(zmq::buffer(bytes), zmq::send_flags::dontwait); })
        .has_value();
  });
}

namespace {

// The routing frames of `identity`: its own, or a node's and then the actor's on its relay.
// A router takes or refuses a message at its first frame, where its pipe's high-water mark is
// checked: false, without waiting, when that pipe is full.
bool send_route(zmq::socket_t& router, const std::string& identity) {
  const auto first = zmq::send_flags::sndmore | zmq::send_flags::dontwait;
  if (auto route = protocol::NodeRoute::split(identity)) {
    if (!protocol::retry_interrupted([&] { return router.send(zmq::buffer(route->first), first); })) return false;
    protocol::retry_interrupted([&] { return router.send(zmq::buffer(route->second), zmq::send_flags::sndmore); });
    return true;
  }
  return protocol::retry_interrupted([&] { return router.send(zmq::buffer(identity), first); }).has_value();
}

}  // namespace

bool send_message(zmq::socket_t& router, const std::string& identity, const protocol::Message& message) {
  return send_encoded(router, identity, protocol::encode(message));
}

bool send_encoded(zmq::socket_t& router, const std::string& identity, std::string_view bytes) {
  if (!send_route(router, identity)) return false;
  protocol::retry_interrupted([&] { return router.send(zmq::buffer(bytes), zmq::send_flags::none); });
  return true;
}

void send_message(zmq::socket_t& dealer, const protocol::Message& message, zmq::message_t& payload) {
  const auto bytes = protocol::encode(message);
  const auto first = [&] {
    return protocol::retry_interrupted([&] {
             return dealer.send(zmq::buffer(bytes), zmq::send_flags::sndmore | zmq::send_flags::dontwait);
           })
        .has_value();
  };
  if (!send_first(dealer, first)) return;
  protocol::retry_interrupted([&] { return dealer.send(payload, zmq::send_flags::none); });
}

bool send_message(zmq::socket_t& router, const std::string& identity, const protocol::Message& message,
                  zmq::message_t& payload) {
  const auto bytes = protocol::encode(message);
  if (!send_route(router, identity)) return false;
  protocol::retry_interrupted([&] { return router.send(zmq::buffer(bytes), zmq::send_flags::sndmore); });
  protocol::retry_interrupted([&] { return router.send(payload, zmq::send_flags::none); });
  return true;
}

bool send_bundle(zmq::socket_t& router, const std::string& node, const protocol::NodeBundle& bundle) {
  // A node's routing id alone splits into itself and an empty route: the bundle's envelope.
  return send_encoded(router, node, protocol::encode(bundle));
}

std::optional<protocol::Message> receive_message(zmq::socket_t& dealer, long timeout_ms) {
  auto received = receive_with_payload(dealer, timeout_ms);
  if (!received) return std::nullopt;
  return std::move(received->message);
}

std::optional<Received> receive_with_payload(zmq::socket_t& dealer, long timeout_ms) {
  // A peer that only listens redials too once refused (protocol/redial.hpp).
  if ((dealer.get(zmq::sockopt::events) & ZMQ_POLLOUT) == 0) redial_of(dealer).step(dealer, std::chrono::steady_clock::now());
  if (!wait_readable(dealer, timeout_ms)) return std::nullopt;
  std::size_t count = 0;
  auto frames = receive_frames(dealer, 2, count);
  if (count == 0) return std::nullopt;
  return decode_frames(frames, count);
}

std::optional<Routed> RouterInbox::receive(zmq::socket_t& router, long timeout_ms) {
  if (next_ == held_.size()) {
    held_.clear();  // its room stays for the next frame
    next_ = 0;
    // Without a timeout the non-blocking receive below answers alone: no poll call per message
    // while a busy driver drains its queue.
    if (timeout_ms > 0 && !wait_readable(router, timeout_ms)) return std::nullopt;
    std::size_t count = 0;
    // The identity, a node's envelope, the message and its payload.
    auto frames = receive_frames(router, 4, count);
    if (count == 0) return std::nullopt;
    decode_routed_frames(frames, count, held_);
  }
  return std::move(held_[next_++]);
}

protocol::Message hello_driver(zmq::socket_t& dealer, const protocol::Message& hello, const std::string& driver,
                               double timeout_seconds, const std::string& peer) {
  using Clock = std::chrono::steady_clock;
  using std::chrono::milliseconds;
  const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                           std::chrono::duration<double>(std::max(0.0, timeout_seconds)));
  auto& redial = redial_of(dealer);
  const auto bytes = protocol::encode(hello);
  // Never a blocking send: a connection refused in its handshake leaves nothing to send to.
  const auto say = [&] { protocol::retry_interrupted([&] { return dealer.send(zmq::buffer(bytes), zmq::send_flags::dontwait); }); };
  std::optional<protocol::Message> reply;
  // Said again now and then too, as the driver answers a Hello it has answered before: one
  // may go with a connection that breaks after its handshake.
  auto resend = milliseconds(2000);
  auto next_resend = Clock::now() + resend;
  say();
  while (true) {
    const auto now = Clock::now();
    if (redial.step(dealer, now)) {
      say();
    } else if (!redial.waiting() && now >= next_resend) {
      // A driver that refused this peer before, silent since: the dial may have left a pipe to
      // nowhere (redial.hpp), dialled again rather than said into.
      if (redial.refusals() > 0) {
        redial.drop(dealer, now);
      } else {
        say();
      }
      resend = std::min(resend * 2, milliseconds(16000));
      next_resend = now + resend;
    }
    if (now >= deadline) break;
    // A refusal shows in no poll: it is looked for every first interval of the redial.
    auto until = std::min({deadline, next_resend, now + protocol::Redial::kFirst});
    if (redial.waiting()) until = std::min(until, redial.due());
    reply = receive_message(dealer, std::max(0L, static_cast<long>(
                                                     std::chrono::duration_cast<milliseconds>(until - now).count())));
    if (reply) break;
  }
  if (!reply && redial.refusals() > 0) {
    throw Error("the driver at " + driver + " refused this " + peer + "'s connection " +
                std::to_string(redial.refusals()) + " time(s) in " + std::to_string(static_cast<int>(timeout_seconds)) +
                " s: it holds as many peers as its connection cap allows (its log counts the refusals), or it has "
                "CURVE keys and admits only " + peer + "s started with --keys DIR holding an actor key it authorized");
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
