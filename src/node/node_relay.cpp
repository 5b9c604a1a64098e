#include "node/node_relay.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <optional>
#include <vector>

#include <spdlog/spdlog.h>

#include "packtune/error.hpp"
#include "protocol/curve_keys.hpp"
#include "protocol/interrupted.hpp"
#include "protocol/node_bundle.hpp"
#include "protocol/node_route.hpp"
#include "protocol/redial.hpp"
#include "protocol/zmq_channel.hpp"
#include "util/work_folder.hpp"

namespace packtune {
namespace {

using Clock = std::chrono::steady_clock;
using protocol::retry_interrupted;

// Messages moved each way per turn, so that neither direction starves the other.
constexpr int kBatch = 1000;

// A machine's actors send and receive far more than one peer: the pipes hold what the kernel's
// buffers do not, rather than drop it at libzmq's default of 1,000 messages. What they hold is
// bounded by the protocol: heartbeats and reports are small, and checkpoint chunks travel in
// windows the receiver grants.
constexpr int kHighWaterMark = 0;  // none

// One whole multipart message, or none when none waits.
std::vector<zmq::message_t> receive_all(zmq::socket_t& from) {
  std::vector<zmq::message_t> frames;
  zmq::message_t frame;
  if (!retry_interrupted([&] { return from.recv(frame, zmq::recv_flags::dontwait); })) return frames;
  bool more = frame.more();
  frames.push_back(std::move(frame));
  while (more) {
    zmq::message_t next;
    retry_interrupted([&] { return from.recv(next, zmq::recv_flags::none); });
    more = next.more();
    frames.push_back(std::move(next));
  }
  return frames;
}

// Sends a whole message, the first frame without waiting: false when `to` takes nothing now
// (no connection to the driver) or has no such peer (an actor gone from the ROUTER).
bool send_all(zmq::socket_t& to, std::vector<zmq::message_t>& frames) {
  const auto flag = [&](std::size_t i) {
    return i + 1 < frames.size() ? zmq::send_flags::sndmore : zmq::send_flags::none;
  };
  try {
    if (!retry_interrupted([&] { return to.send(frames[0], flag(0) | zmq::send_flags::dontwait); })) return false;
  } catch (const zmq::error_t& e) {
    if (e.num() != EHOSTUNREACH) throw;
    return false;
  }
  for (std::size_t i = 1; i < frames.size(); ++i) retry_interrupted([&] { return to.send(frames[i], flag(i)); });
  return true;
}

const std::string& heartbeat_bytes() {
  static const std::string bytes = protocol::encode(protocol::Heartbeat{});
  return bytes;
}

// Whether `body` is a Hello, from its first bytes alone: the archive's byte order flag and the
// verb's index (protocol.cpp), which no other verb shares. Nothing else of it is read here.
bool is_hello(const zmq::message_t& body) {
  static const std::string hello = protocol::encode(protocol::Hello{});
  constexpr std::size_t kTag = 1 + 4;
  return body.size() >= kTag && std::memcmp(body.data(), hello.data(), kTag) == 0;
}

}  // namespace

NodeRelay::NodeRelay(zmq::context_t& context, const std::string& driver, const CurveKeys* keys)
    : frontend_(context, zmq::socket_type::router), backend_(context, zmq::socket_type::dealer), driver_(driver),
      routing_id_(protocol::NodeRoute::fresh_routing_id()) {
  frontend_.set(zmq::sockopt::linger, 0);
  backend_.set(zmq::sockopt::linger, 1000);
  for (auto* socket : {&frontend_, &backend_}) {
    socket->set(zmq::sockopt::sndhwm, kHighWaterMark);
    socket->set(zmq::sockopt::rcvhwm, kHighWaterMark);
    limit_frames(*socket);
  }
  frontend_.set(zmq::sockopt::router_mandatory, 1);
  backend_.set(zmq::sockopt::routing_id, routing_id_);
  if (keys) use_curve_client(backend_, *keys);
  try {
    backend_.connect(driver);
  } catch (const zmq::error_t& e) {
    throw InputError("--driver " + driver + ": " + e.what() +
                     "; expected the endpoint packtune run prints, e.g. tcp://HOST:PORT or ipc:///path");
  }
  // A folder of mode 0700: no other user reaches the actors' unencrypted hop.
  folder_ = util::fresh_work_dir("relay");
  actor_endpoint_ = "ipc://" + folder_ + "/actors.ipc";
  frontend_.bind(actor_endpoint_);
  frontend_.bind(kAgentEndpoint);
  thread_ = std::thread([this] { run(); });
}

void NodeRelay::set_timing(double heartbeat_seconds, double actor_timeout_seconds) {
  heartbeat_seconds_ = heartbeat_seconds;
  actor_timeout_seconds_ = actor_timeout_seconds;
}

NodeRelay::~NodeRelay() {
  stop_ = true;
  thread_.join();
  std::error_code ec;
  std::filesystem::remove(folder_ + "/actors.ipc", ec);
  std::filesystem::remove(folder_, ec);
}

bool NodeRelay::up(Clock::time_point now) {
  auto frames = receive_all(frontend_);
  if (frames.empty()) return false;
  auto route = frames[0].to_string();
  auto& peer = peers_[route];
  if (frames.size() == 2) {
    const auto& body = frames[1];
    if (body.size() == heartbeat_bytes().size() &&
        std::memcmp(body.data(), heartbeat_bytes().data(), body.size()) == 0) {
      const double timeout = actor_timeout_seconds_;
      // An actor the driver heard of lately: its heartbeat stays here.
      if (peer.actor && timeout > 0 && now - peer.last_up < std::chrono::duration<double>(timeout / 3)) {
        ++heartbeats_kept_;
        return true;
      }
    } else if (is_hello(body)) {
      // Only an actor's main socket says Hello; its transfer socket and the agent never do.
      // Until the driver answers it, nothing but the answer may reach it: a heartbeat from here
      // would stand where it waits for its Welcome.
      peer.actor = true;
      peer.answered = false;
    }
    // A lone frame goes in this turn's bundle (flush_up), or the next when this one is full.
    if (!up_.has_room(route.size() + frames[1].size())) flush_up(now);
    up_.add(route, frames[1].to_string());
    return true;
  }
  // A Chunk's payload frame travels alone, after what came before it.
  flush_up(now);
  if (send_all(backend_, frames)) {
    peer.last_up = now;
  } else {
    ++dropped_;
  }
  return true;
}

void NodeRelay::flush_up(Clock::time_point now) {
  if (up_.size() == 0) return;
  std::vector<zmq::message_t> frames;
  if (up_.size() == 1) {
    frames.emplace_back(up_.routes[0]);
    frames.emplace_back(up_.messages[0]);
  } else {
    frames.emplace_back();  // the empty envelope of a bundle
    frames.emplace_back(protocol::encode(up_));
  }
  if (send_all(backend_, frames)) {
    for (const auto& route : up_.routes) peers_[route].last_up = now;
  } else {
    dropped_ += static_cast<std::int64_t>(up_.size());
  }
  up_.clear();
}

bool NodeRelay::down(Clock::time_point now) {
  auto frames = receive_all(backend_);
  if (frames.empty()) return false;
  driver_heard_ = now;
  if (frames.size() == 2 && frames[0].size() == 0) {
    protocol::NodeBundle bundle;
    try {
      bundle = protocol::decode_bundle(frames[1].data(), frames[1].size());
    } catch (const protocol::ProtocolError& e) {
      spdlog::warn("node relay: dropped a bundle from the driver: {}", e.what());
      ++dropped_;
      return true;
    }
    for (std::size_t i = 0; i < bundle.size(); ++i) {
      std::vector<zmq::message_t> one;
      one.emplace_back(bundle.routes[i]);
      one.emplace_back(bundle.messages[i]);
      pass_down(bundle.routes[i], one, now);
    }
    return true;
  }
  const auto routing_id = frames[0].to_string();
  pass_down(routing_id, frames, now);
  return true;
}

void NodeRelay::pass_down(const std::string& routing_id, std::vector<zmq::message_t>& frames, Clock::time_point now) {
  if (send_all(frontend_, frames)) {
    if (auto it = peers_.find(routing_id); it != peers_.end()) {
      it->second.last_down = now;
      it->second.answered = true;
    }
  } else {
    ++dropped_;
    peers_.erase(routing_id);
  }
}

// While the driver is heard, each actor that got nothing for a heartbeat gets one from here: a
// driver gone silent leaves the actors silent too, and they stop as they would connected to it.
void NodeRelay::heartbeat_actors(Clock::time_point now) {
  const double heartbeat = heartbeat_seconds_;
  if (!(heartbeat > 0) || now < next_heartbeats_) return;
  const auto period = std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(heartbeat));
  next_heartbeats_ = now + period / 4;
  if (now - driver_heard_ > 3 * period) return;
  for (auto it = peers_.begin(); it != peers_.end();) {
    if (!it->second.actor || !it->second.answered || now - it->second.last_down < period) {
      ++it;
      continue;
    }
    std::vector<zmq::message_t> frames;
    frames.emplace_back(it->first);
    frames.emplace_back(heartbeat_bytes());
    if (!send_all(frontend_, frames)) {
      it = peers_.erase(it);
      continue;
    }
    it->second.last_down = now;
    ++it;
  }
}

void NodeRelay::run() {
  protocol::Redial redial(driver_, std::chrono::milliseconds(1000));
  // As hello_driver does for a peer of its own: a connection refused before and silent since
  // may have left a pipe that leads nowhere (redial.hpp), so it is dialled again, after 2 s,
  // then 4, 8 and 16.
  auto silence = std::chrono::milliseconds(2000);
  auto last_heard = Clock::now();
  std::optional<Clock::time_point> stop_by;
  try {
    while (true) {
      auto now = Clock::now();
      if (redial.step(backend_, now)) last_heard = now;
      if (!redial.waiting() && redial.refusals() > 0 && now - last_heard > silence) {
        redial.drop(backend_, now);
        silence = std::min(silence * 2, std::chrono::milliseconds(16000));
      }
      zmq::pollitem_t items[] = {{frontend_.handle(), 0, ZMQ_POLLIN, 0}, {backend_.handle(), 0, ZMQ_POLLIN, 0}};
      retry_interrupted([&] { return zmq::poll(items, 2, std::chrono::milliseconds(50)); });
      now = Clock::now();
      int sent = 0;
      if (items[0].revents & ZMQ_POLLIN) {
        while (sent < kBatch && up(now)) ++sent;
        flush_up(now);
      }
      if (stop_) {
        // The agent's last words (its actors' exits) go before the relay does.
        if (!stop_by) stop_by = Clock::now() + std::chrono::seconds(1);
        if (sent == 0 || Clock::now() >= *stop_by) break;
      }
      if (items[1].revents & ZMQ_POLLIN) {
        int moved = 0;
        while (moved < kBatch && down(now)) ++moved;
        if (moved > 0) {
          redial.heard();
          last_heard = now;
          silence = std::chrono::milliseconds(2000);
        }
      }
      heartbeat_actors(now);
    }
  } catch (const std::exception& e) {
    // Nothing moves any more: the agent hears no driver and ends after driver_timeout_seconds.
    spdlog::error("node relay to {} stopped: {}", driver_, e.what());
  }
}

}  // namespace packtune
