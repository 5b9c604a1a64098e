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
#include <atomic>
#include <memory>
#include <set>
#include <string>
#include <thread>

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

// Puts `socket` (the driver's router, before bind) in CURVE server mode, with a ZAP handler
// on `context` that admits only the authorized actor keys, and logs refusals of unknown keys
// as counts (refusal_log.hpp). Peers that fail the handshake itself never reach ZAP: the
// socket's monitor (peer_guard.hpp) logs them.
class CurveServer {
 public:
  CurveServer(zmq::context_t& context, zmq::socket_t& socket, CurveKeys keys);
  ~CurveServer();  // before the context goes: the handler's socket must close first
  CurveServer(const CurveServer&) = delete;
  CurveServer& operator=(const CurveServer&) = delete;

 private:
  void serve(zmq::socket_t& handler);
  void answer(zmq::socket_t& handler);  // one ZAP request

  CurveKeys keys_;
  protocol::RefusalLog unknown_keys_;   // the handler thread's own
  protocol::RefusalLog no_curve_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

// Sets an actor's dealer socket (before connect) to talk CURVE to the driver.
void use_curve_client(zmq::socket_t& socket, const CurveKeys& keys);

}  // namespace packtune
