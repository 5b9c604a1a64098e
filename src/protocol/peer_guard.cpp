#include "protocol/peer_guard.hpp"

#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <memory>
#include <set>

#include "packtune/error.hpp"
#include "protocol/interrupted.hpp"
#include "protocol/refusal_log.hpp"

namespace packtune::protocol {

PeerGuard::Limits PeerGuard::raise_fd_limit() {
  Limits limits;
  rlimit r{};
  if (getrlimit(RLIMIT_NOFILE, &r) == 0) {
    if (r.rlim_cur < r.rlim_max) {
      rlimit raised = r;
      raised.rlim_cur = r.rlim_max;
      if (setrlimit(RLIMIT_NOFILE, &raised) == 0) r = raised;
    }
    limits.fd_limit = r.rlim_cur == RLIM_INFINITY ? std::int64_t{1} << 20 : static_cast<std::int64_t>(r.rlim_cur);
  } else {
    limits.fd_limit = 1024;
  }
  // A quarter of the descriptors, and at least kReservedFds, stay for everything else.
  const auto reserved = std::max(kReservedFds, limits.fd_limit / 4);
  limits.max_connections = std::clamp<std::int64_t>(limits.fd_limit - reserved, 1, kMaxConnections);
  return limits;
}

struct PeerGuard::Logs {
  RefusalLog too_many, no_fds, failed;
};

PeerGuard::PeerGuard(zmq::context_t& context, zmq::socket_t& socket, Limits limits, bool curve)
    : limits_(limits), curve_(curve) {
  // Bounds the time a connection holds its slot before it proves to be a packtune peer: idle
  // connections, and handshakes a peer started and never finished, go after 10 s.
  socket.set(zmq::sockopt::handshake_ivl, kHandshakeMilliseconds);
  const std::string endpoint = "inproc://packtune-peer-monitor";
  if (zmq_socket_monitor(socket.handle(), endpoint.c_str(),
                         ZMQ_EVENT_ACCEPTED | ZMQ_EVENT_ACCEPT_FAILED | ZMQ_EVENT_DISCONNECTED |
                             ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL | ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL |
                             ZMQ_EVENT_HANDSHAKE_FAILED_AUTH) != 0) {
    throw Error(std::string("cannot monitor the driver's socket: ") + zmq_strerror(zmq_errno()));
  }
  monitor_ = std::make_unique<zmq::socket_t>(context, zmq::socket_type::pair);
  monitor_->set(zmq::sockopt::linger, 0);
  monitor_->connect(endpoint);
  logs_ = std::make_unique<Logs>(Logs{
      RefusalLog("new connection(s): too many connections (at most " + std::to_string(limits_.max_connections) +
                 " at once, for a file-descriptor limit, ulimit -n, of " + std::to_string(limits_.fd_limit) +
                 "; the rest is kept for the driver's own files)"),
      RefusalLog("connection(s): out of file descriptors (the limit, ulimit -n, is " +
                 std::to_string(limits_.fd_limit) + "); new peers wait until connections close"),
      // With keys, a key the ZAP handler refused fails the handshake too: counted here as well.
      RefusalLog(curve_ ? "connection(s) that failed the CURVE handshake (not a packtune actor, or one with "
                          "another driver's key or an unknown key)"
                        : "connection(s) that failed the ZeroMQ handshake (not a packtune peer)")});
  thread_ = std::thread([this] { watch(); });
}

PeerGuard::~PeerGuard() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
}

bool PeerGuard::admits(int fd) {
  std::lock_guard<std::mutex> lock(mutex_);
  drain(std::chrono::steady_clock::now());
  return open_.count(fd) > 0;
}

// The monitor's descriptor is waited on without the lock, so that admits() never waits for a
// poll; the events are read under it.
void PeerGuard::watch() {
  const int fd = monitor_->get(zmq::sockopt::fd);
  while (!stop_) {
    pollfd item{fd, POLLIN, 0};
    ::poll(&item, 1, 100);
    std::lock_guard<std::mutex> lock(mutex_);
    const auto now = std::chrono::steady_clock::now();
    drain(now);
    logs_->too_many.flush(now);
    logs_->no_fds.flush(now);
    logs_->failed.flush(now);
  }
}

void PeerGuard::drain(std::chrono::steady_clock::time_point now) {
  while (true) {
    // A monitor event: [16-bit event, 32-bit value], then the endpoint.
    zmq::message_t event, where;
    const auto next = [this](zmq::message_t& frame) {
      return retry_interrupted([&] { return monitor_->recv(frame, zmq::recv_flags::dontwait); });
    };
    if (!next(event)) return;
    if (event.more() && !next(where)) return;
    if (event.size() < 6) continue;
    std::uint16_t id = 0;
    std::int32_t value = 0;
    std::memcpy(&id, event.data(), 2);
    std::memcpy(&value, static_cast<const char*>(event.data()) + 2, 4);
    on_event(id, value, now);
  }
}

void PeerGuard::on_event(std::uint16_t id, std::int32_t value, std::chrono::steady_clock::time_point now) {
  switch (id) {
    case ZMQ_EVENT_ACCEPTED:
      if (static_cast<std::int64_t>(open_.size()) >= limits_.max_connections) {
        ::shutdown(value, SHUT_RDWR);
        refused_.insert(value);
        ++own_failures_;
        logs_->too_many.refuse("", now);
      } else {
        open_.insert(value);
      }
      break;
    case ZMQ_EVENT_DISCONNECTED:
      open_.erase(value);
      refused_.erase(value);
      own_failures_ = std::min(own_failures_, refused_.size());
      break;
    case ZMQ_EVENT_ACCEPT_FAILED:
      if (value == EMFILE || value == ENFILE) logs_->no_fds.refuse("", now);
      break;
    default:  // the handshake failures
      if (id == ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL && own_failures_ > 0) {
        --own_failures_;
      } else {
        logs_->failed.refuse("", now);
      }
  }
}

}  // namespace packtune::protocol
