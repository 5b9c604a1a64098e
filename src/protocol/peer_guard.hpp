#pragma once
// What bounds the peers of the driver's listening socket: how many connections it holds, how
// long a handshake may take, and what is logged of the ones it refuses.
//
// libzmq 4.3.4 (Debian 12) accepts every TCP or ipc connection before any handshake and has
// no option for a connection limit; each connection holds a file descriptor. Its listener
// survives EMFILE (it reports ACCEPT_FAILED and retries), but the driver's own files (the
// journal's rotation, best.json, report.html, a checkpoint's .part file) then fail with errors
// that name the file, not the cause. So the guard watches the socket's monitor: ACCEPTED
// carries the new connection's descriptor, DISCONNECTED the same one when it goes. Beyond the
// cap it shuts the new descriptor down (shutdown(2), never close(2): the descriptor stays
// libzmq's, which sees the end of the stream, reports DISCONNECTED and closes it itself).
// The cap leaves a reserve of descriptors for the driver's files, local actors and libzmq's
// own, and the soft RLIMIT_NOFILE is raised to the hard one first.
//
// A descriptor the guard shuts down could in principle have been closed by libzmq and reused
// in between; the only descriptors the driver's socket reuses that way are its own new
// connections, so the worst case is a peer that connects again.
#include <atomic>
#include <cstdint>
#include <string>
#include <thread>

#include <zmq.hpp>

namespace packtune::protocol {

class PeerGuard {
 public:
  struct Limits {
    std::int64_t fd_limit = 0;         // RLIMIT_NOFILE after raising it
    std::int64_t max_connections = 0;  // the cap
  };
  // Raises the soft file-descriptor limit to the hard one, and sizes the cap from it.
  static Limits raise_fd_limit();

  static constexpr std::int64_t kReservedFds = 64;  // at least, for the driver's own files
  // 1,000 remote actors with their transfer sockets, and their nodes, twice over. Before it
  // authenticates a connection holds at most one frame (kMaxFrameBytes, zmq_channel.hpp), and
  // only as long as the handshake may take: memory before authentication is bounded by
  // kMaxConnections x kMaxFrameBytes, resident only as far as peers send the bytes.
  static constexpr std::int64_t kMaxConnections = 4096;
  static constexpr int kHandshakeMilliseconds = 10'000;  // a handshake not done by then: dropped

  // Before `socket` binds: monitors it from a thread of its own until destroyed. `curve`: the
  // socket speaks CURVE (for the wording of handshake failures).
  PeerGuard(zmq::context_t& context, zmq::socket_t& socket, Limits limits, bool curve);
  ~PeerGuard();  // before the context goes
  PeerGuard(const PeerGuard&) = delete;
  PeerGuard& operator=(const PeerGuard&) = delete;

 private:
  void watch(zmq::socket_t& monitor);

  Limits limits_;
  bool curve_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace packtune::protocol
