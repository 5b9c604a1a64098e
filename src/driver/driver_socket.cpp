#include "driver/driver_socket.hpp"

#include <unistd.h>

#include <random>

#include <spdlog/spdlog.h>

#include "packtune/error.hpp"
#include "protocol/curve_keys.hpp"
#include "protocol/peer_guard.hpp"
#include "protocol/zmq_channel.hpp"
#include "util/work_folder.hpp"

namespace packtune {
namespace {

std::string make_endpoint(const std::string& listen) {
  if (listen == "ipc") {
    std::random_device rd;
    return "ipc://" + (util::temp_folder() / ("packtune-" + std::to_string(getpid()) + "-" +
                                              std::to_string(rd() % 100000) + ".ipc"))
                          .string();
  }
  if (listen == "tcp") return "tcp://127.0.0.1:*";
  return listen;
}

}  // namespace

DriverSocket::DriverSocket() : context_(1), router_(context_, zmq::socket_type::router) {}

DriverSocket::~DriverSocket() {
  if (!ipc_file_.empty()) ::unlink(ipc_file_.c_str());
}

void DriverSocket::bind(const ExperimentConfig& config) {
  router_.set(zmq::sockopt::linger, 0);
  router_.set(zmq::sockopt::router_mandatory, 1);
  // A node's relay names its connection (protocol/node_route.hpp) and keeps the name when it
  // connects again: the new connection takes the name over from one the driver has not yet
  // seen close.
  router_.set(zmq::sockopt::router_handover, 1);
  // A node's one pipe carries all its actors' messages, bursts of a dispatch pass among them:
  // ten times libzmq's 1,000. A peer that leaves this many unread has stopped reading, and
  // sends to it fail instead of waiting (DriverCore::peer_stalled).
  router_.set(zmq::sockopt::sndhwm, 10000);
  limit_frames(router_);
  const auto endpoint = make_endpoint(config.listen);
  // Keys, where given, are used on every endpoint: nodes and actors started with --keys
  // speak CURVE, and a driver that dropped it on ipc or loopback could not hear them.
  if (!config.keys.empty()) {
    curve_ = std::make_unique<CurveServer>(router_, load_driver_keys(config.keys));
  } else if (reaches_beyond_this_machine(endpoint)) {
    // Anyone who reaches the port would otherwise get trial configs and have their
    // reports taken as results.
    if (!config.insecure) {
      throw InputError("listen: " + endpoint + " can be reached from other machines; make keys with `packtune keys DIR` "
                       "and set \"keys\": \"DIR\" (actors then need --keys DIR), or set \"insecure\": true");
    } else {
      spdlog::warn("listening on {} without authentication (\"insecure\": true): any peer that reaches the port "
                   "can take trials and send results", endpoint);
    }
  } else if (endpoint.rfind("tcp://", 0) == 0) {
    // Loopback is no boundary between the users of one machine.
    spdlog::warn("listening on {} without keys: every user of this machine can connect, take trials and send "
                 "results; make keys with `packtune keys DIR` and set \"keys\": \"DIR\" (docs/cluster.md), or "
                 "listen on \"ipc\"", endpoint);
  }
  guard_ = std::make_unique<protocol::PeerGuard>(context_, router_, protocol::PeerGuard::raise_fd_limit(), curve_.get());
  try {
    router_.bind(endpoint);
  } catch (const zmq::error_t& e) {
    throw InputError("listen: cannot bind " + config.listen + " (" + e.what() + ")");
  }
  endpoint_ = router_.get(zmq::sockopt::last_endpoint);
  if (endpoint_.rfind("ipc://", 0) == 0) ipc_file_ = endpoint_.substr(6);
}

}  // namespace packtune
