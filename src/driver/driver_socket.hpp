#pragma once
// The driver's router socket and who may reach it: the endpoint it binds (a fresh ipc socket, a
// loopback port, or what the config names), CURVE keys where given, the refusal of a port that
// other machines reach without them, and the connection cap (protocol/peer_guard.hpp). What
// arrives on it is the loop's business (driver.cpp).
#include <memory>
#include <string>

#include <zmq.hpp>

#include "experiment/experiment_config.hpp"

namespace packtune {

class CurveServer;
namespace protocol {
class PeerGuard;
}

class DriverSocket {
 public:
  DriverSocket();
  // ZeroMQ leaves the socket file of an ipc endpoint behind; one per run would pile up in /tmp.
  ~DriverSocket();
  DriverSocket(const DriverSocket&) = delete;
  DriverSocket& operator=(const DriverSocket&) = delete;

  // Throws InputError for an endpoint it cannot bind, or one reachable from other machines
  // without keys unless the config says "insecure".
  void bind(const ExperimentConfig& config);

  zmq::socket_t& router() { return router_; }
  // The bound endpoint, with the port or the ipc path chosen: what actors and nodes connect to.
  const std::string& endpoint() const { return endpoint_; }
  // Peers must speak CURVE with the run's keys.
  bool secure() const { return curve_ != nullptr; }

 private:
  zmq::context_t context_;
  zmq::socket_t router_;
  std::unique_ptr<CurveServer> curve_;
  // The connection cap and the ZAP handler, which asks curve_: declared after both the context
  // and curve_, it goes first.
  std::unique_ptr<protocol::PeerGuard> guard_;
  std::string endpoint_;
  std::string ipc_file_;  // the socket file of an ipc endpoint, removed at the end
};

}  // namespace packtune
