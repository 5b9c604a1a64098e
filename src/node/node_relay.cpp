#include "node/node_relay.hpp"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <optional>

#include <spdlog/spdlog.h>

#include "packtune/error.hpp"
#include "protocol/curve_keys.hpp"
#include "protocol/interrupted.hpp"
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

// Moves the rest of a multipart message whose first frame went (or was dropped: `to` null).
void move_rest(zmq::socket_t& from, zmq::socket_t* to, bool more) {
  while (more) {
    zmq::message_t frame;
    retry_interrupted([&] { return from.recv(frame, zmq::recv_flags::none); });
    more = frame.more();
    if (to) retry_interrupted([&] { return to->send(frame, more ? zmq::send_flags::sndmore : zmq::send_flags::none); });
  }
}

// Forwards one message from `from` to `to`, or drops it when `to` takes no first frame now.
// False when `from` held none.
bool forward(zmq::socket_t& from, zmq::socket_t& to, std::atomic<std::int64_t>& dropped) {
  zmq::message_t first;
  if (!retry_interrupted([&] { return from.recv(first, zmq::recv_flags::dontwait); })) return false;
  const bool more = first.more();
  bool sent = false;
  try {
    sent = retry_interrupted([&] {
             return to.send(first, (more ? zmq::send_flags::sndmore : zmq::send_flags::none) | zmq::send_flags::dontwait);
           }).has_value();
  } catch (const zmq::error_t& e) {
    if (e.num() != EHOSTUNREACH) throw;  // an actor gone from the ROUTER
  }
  if (!sent) ++dropped;
  move_rest(from, sent ? &to : nullptr, more);
  return true;
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

NodeRelay::~NodeRelay() {
  stop_ = true;
  thread_.join();
  std::error_code ec;
  std::filesystem::remove(folder_ + "/actors.ipc", ec);
  std::filesystem::remove(folder_, ec);
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
      int sent = 0;
      if (items[0].revents & ZMQ_POLLIN) {
        while (sent < kBatch && forward(frontend_, backend_, dropped_)) ++sent;
      }
      if (stop_) {
        // The agent's last words (its actors' exits) go before the relay does.
        if (!stop_by) stop_by = Clock::now() + std::chrono::seconds(1);
        if (sent == 0 || Clock::now() >= *stop_by) break;
      }
      if (items[1].revents & ZMQ_POLLIN) {
        int moved = 0;
        while (moved < kBatch && forward(backend_, frontend_, dropped_)) ++moved;
        if (moved > 0) {
          redial.heard();
          last_heard = Clock::now();
          silence = std::chrono::milliseconds(2000);
        }
      }
    }
  } catch (const std::exception& e) {
    // Nothing moves any more: the agent hears no driver and ends after driver_timeout_seconds.
    spdlog::error("node relay to {} stopped: {}", driver_, e.what());
  }
}

}  // namespace packtune
