#pragma once
// ZeroMQ CURVE for a driver that listens beyond this machine: `packtune keys DIR` makes the
// key pairs, the driver encrypts its socket and admits only actors whose public key is in
// DIR/authorized_actors (a ZAP handler), and actors connect with DIR's actor key.
//
//   DIR/driver.key  DIR/driver.pub      the driver's pair (actors need driver.pub)
//   DIR/actor.key   DIR/actor.pub       an actor pair (copy both to the actors' machines)
//   DIR/authorized_actors               actor public keys the driver admits, one per line
//
// Keys are Z85 text, 40 characters, in files readable by their owner only (0600). Loading
// refuses, as ssh does, a `.key` file with any permission for group or others, the other
// files if group or others may write them, and a folder group or others may write into.
#include <chrono>
#include <set>
#include <string>
#include <vector>

#include <zmq.hpp>

#include "protocol/refusal_log.hpp"

namespace packtune {

struct CurveKeys {
  std::string dir;
  std::string driver_public;
  std::string driver_secret;  // the driver's side only
  std::string actor_public;   // the actor's side only
  std::string actor_secret;
  std::set<std::string> authorized;  // the driver's side only
};

// Writes a fresh set of keys, each file new and 0600, into `dir`: a folder it creates with mode
// 0700, or an empty one whose mode it keeps. Anything else there, a key file already there, or
// a folder group or others may write into, is an InputError: it never overwrites keys nor
// writes through a link.
void make_keys(const std::string& dir);
CurveKeys load_driver_keys(const std::string& dir);
CurveKeys load_actor_keys(const std::string& dir);

// Whether peers on other machines can reach a ZeroMQ endpoint: tcp on any address but a
// loopback one (ipc and inproc stay on this machine).
bool reaches_beyond_this_machine(const std::string& endpoint);

// Puts `socket` (the driver's router, before bind) in CURVE server mode and judges the
// credentials of each ZAP request: only the authorized actor keys pass, and refusals of
// unknown keys are logged as counts (refusal_log.hpp). The ZAP handler that asks is the
// connection cap's (peer_guard.hpp): one handler per context, and a connection must pass both.
// Peers that fail the handshake itself never reach ZAP: the socket's monitor logs them.
class CurveServer {
 public:
  CurveServer(zmq::socket_t& socket, CurveKeys keys);

  // A ZAP request's frames (ZeroMQ RFC 27): whether its peer authenticated with an authorized
  // key. The ZAP handler's thread only.
  bool authenticates(const std::vector<zmq::message_t>& request, std::chrono::steady_clock::time_point now);
  // Logs the last refusals of a burst even when no request follows them.
  void flush(std::chrono::steady_clock::time_point now);

 private:
  CurveKeys keys_;
  protocol::RefusalLog unknown_keys_;
  protocol::RefusalLog no_curve_;
};

// Sets an actor's dealer socket (before connect) to talk CURVE to the driver.
void use_curve_client(zmq::socket_t& socket, const CurveKeys& keys);

}  // namespace packtune
