#pragma once
// Who may hold a connection to the driver's listening socket: how many peers at once (the
// connection cap), with keys which peers at all, how long a handshake may take, and what is
// logged of the ones refused.
//
// libzmq 4.3.4 (Debian 12) accepts every TCP or ipc connection before any handshake and has
// no option for a connection limit; each connection holds a file descriptor. Its listener
// survives EMFILE (it reports ACCEPT_FAILED and retries), but the driver's own files (the
// journal's rotation, best.json, report.html, a checkpoint's .part file) then fail with errors
// that name the file, not the cause. So the cap leaves a reserve of descriptors for the
// driver's files, local actors and libzmq's own, and the soft RLIMIT_NOFILE is raised first.
//
// The cap is decided in the handshake, by the one ZAP handler of the driver's context (ZeroMQ
// RFC 27, also asked about CURVE keys when there are any): a peer over the cap is answered 400,
// so its connection never carries a message, and an admitted one is never cut afterwards.
// Deciding after the fact, by the descriptor a monitor event names, cut admitted peers: a
// descriptor closed and reused names another connection by the time the decision is read.
//
// ZAP says nothing of which connection asks, and the monitor's events of a handshake carry no
// descriptor, so the slots are counted without knowing which descriptor took one: a slot is
// taken by a grant, and a connection open longer than any handshake may last
// (kSettledMilliseconds) has finished its handshake, so it holds one. The peers admitted
// count at most as the grants of that last interval plus the settled connections: never
// under, and over only by the peers admitted and gone within it. A settled connection that
// closes frees its slot at once.
//
// Connections that never reach ZAP (a peer that does not speak ZMTP, idle connections) are
// bounded by descriptor: beyond max_open connections in any state, one the monitor reports
// accepted is shut down (shutdown(2), never close(2): the descriptor stays libzmq's, which sees
// the end of the stream and closes it itself). Such a connection has not been answered by ZAP,
// whose handler is the same thread, so none admitted is ever shut down.
#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <zmq.hpp>

namespace packtune {
class CurveServer;
}

namespace packtune::protocol {

class PeerGuard {
 public:
  using Clock = std::chrono::steady_clock;

  struct Limits {
    std::int64_t fd_limit = 0;         // RLIMIT_NOFILE after raising it
    std::int64_t max_connections = 0;  // the cap: peers admitted at once
    std::int64_t max_open = 0;         // connections open at once, handshakes included
  };
  // Raises the soft file-descriptor limit to the hard one, and sizes the cap from it.
  static Limits raise_fd_limit();
  // The cap and bounds of a driver whose file-descriptor limit is `fd_limit`.
  static Limits limits_for(std::int64_t fd_limit);

  static constexpr std::int64_t kReservedFds = 64;  // at least, for the driver's own files
  // 1,000 remote actors with their transfer sockets, and their nodes, twice over. Before it
  // authenticates a connection holds at most one frame (kMaxFrameBytes, zmq_channel.hpp), and
  // only as long as the handshake may take: memory before authentication is bounded by
  // max_open x kMaxFrameBytes, resident only as far as peers send the bytes.
  static constexpr std::int64_t kMaxConnections = 4096;
  static constexpr int kHandshakeMilliseconds = 10'000;  // a handshake not done by then: dropped
  // Longer than a handshake may last, with room for libzmq's I/O thread to start the
  // handshake's timer late under load.
  static constexpr int kSettledMilliseconds = kHandshakeMilliseconds + 2'000;

  // Before `socket` binds: answers ZAP on `context` and monitors `socket`, from a thread of its
  // own until destroyed. `curve`: the keys' judge where the socket speaks CURVE (outlives this).
  PeerGuard(zmq::context_t& context, zmq::socket_t& socket, Limits limits, CurveServer* curve);
  ~PeerGuard();  // before the context goes
  PeerGuard(const PeerGuard&) = delete;
  PeerGuard& operator=(const PeerGuard&) = delete;

 private:
  struct Logs;
  struct Event {
    std::uint16_t id;
    std::int32_t value;
  };
  struct Connection {
    std::uint64_t serial = 0;  // tells this connection from an earlier one of the same descriptor
    bool settled = false;      // counted in settled_
    bool cut = false;          // shut down here
  };

  void watch(zmq::socket_t& zap);
  void drain(Clock::time_point now);
  void on_accepted(int fd, bool gone_already, Clock::time_point now);
  void on_event(const Event& event, Clock::time_point now);
  void answer(zmq::socket_t& zap, std::vector<zmq::message_t>& request, Clock::time_point now);
  bool has_room(Clock::time_point now);

  Limits limits_;
  CurveServer* curve_;
  std::unique_ptr<zmq::socket_t> monitor_;
  std::unique_ptr<Logs> logs_;
  // The books below are the guard's thread's alone.
  std::map<int, Connection> open_;  // by descriptor
  std::uint64_t serials_ = 0;
  std::deque<std::pair<Clock::time_point, std::pair<int, std::uint64_t>>> unsettled_;  // in order accepted
  std::int64_t settled_ = 0;
  std::deque<Clock::time_point> grants_;  // of the last kSettledMilliseconds
  // Connections this guard shut down or refused fail their handshakes too, as libzmq sees
  // them: those failures are not logged a second time.
  std::int64_t own_failures_ = 0;
  std::int64_t own_auth_failures_ = 0;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace packtune::protocol
