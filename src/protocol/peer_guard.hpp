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
// The guard decides after libzmq accepted, on its own thread, so a refused connection may
// finish its handshake and deliver a message before the guard shuts it down. A peer taken in
// that way would be registered, welcomed over a connection that is then cut, and never heard
// again: with more peers than the cap, the driver registered nearly all of them and served
// none. So the driver asks admits() of every peer's first message (Hello, NodeHello): the
// connection's ACCEPTED event is queued before any of its messages can arrive, so once the
// pending events are read, the guard has decided on that connection. A peer whose first
// message is dropped says it again (hello_driver).
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <set>
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

  // Whether the connection of descriptor `fd` (ZMQ_SRCFD of a message) is one the guard holds,
  // after every event queued so far: false for one it refused or one already gone. Any thread.
  bool admits(int fd);

 private:
  struct Logs;
  void watch();
  // Reads the queued events without waiting; `mutex_` held.
  void drain(std::chrono::steady_clock::time_point now);
  void on_event(std::uint16_t id, std::int32_t value, std::chrono::steady_clock::time_point now);

  Limits limits_;
  bool curve_;
  std::mutex mutex_;  // the monitor socket and the books below: the guard's thread and admits()
  std::unique_ptr<zmq::socket_t> monitor_;
  std::unique_ptr<Logs> logs_;
  std::set<int> open_;     // the descriptors of the connections held
  std::set<int> refused_;  // those shut down here, until libzmq reports them gone
  // A connection shut down in its handshake also fails it, as libzmq sees it: that failure
  // is not logged a second time.
  std::size_t own_failures_ = 0;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace packtune::protocol
