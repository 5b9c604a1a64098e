#include "protocol/peer_guard.hpp"

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
  auto monitor = std::make_shared<zmq::socket_t>(context, zmq::socket_type::pair);
  monitor->set(zmq::sockopt::linger, 0);
  monitor->connect(endpoint);
  thread_ = std::thread([this, monitor] { watch(*monitor); });
}

PeerGuard::~PeerGuard() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
}

void PeerGuard::watch(zmq::socket_t& monitor) {
  using Clock = std::chrono::steady_clock;
  RefusalLog too_many("new connection(s): too many connections (at most " + std::to_string(limits_.max_connections) +
                      " at once, for a file-descriptor limit, ulimit -n, of " + std::to_string(limits_.fd_limit) +
                      "; the rest is kept for the driver's own files)");
  RefusalLog no_fds("connection(s): out of file descriptors (the limit, ulimit -n, is " +
                    std::to_string(limits_.fd_limit) + "); new peers wait until connections close");
  // With keys, a key the ZAP handler refused fails the handshake too: counted here as well.
  RefusalLog failed(curve_ ? "connection(s) that failed the CURVE handshake (not a packtune actor, or one with "
                             "another driver's key or an unknown key)"
                           : "connection(s) that failed the ZeroMQ handshake (not a packtune peer)");
  std::set<int> open;     // the descriptors of the connections held
  std::set<int> refused;  // those shut down here, until libzmq reports them gone
  // A connection shut down in its handshake also fails it, as libzmq sees it: that failure
  // is not logged a second time.
  std::size_t own_failures = 0;
  while (!stop_) {
    zmq::pollitem_t item{monitor.handle(), 0, ZMQ_POLLIN, 0};
    retry_interrupted([&] { return zmq::poll(&item, 1, std::chrono::milliseconds(100)); });
    const auto now = Clock::now();
    if (item.revents & ZMQ_POLLIN) {
      // A monitor event: [16-bit event, 32-bit value], then the endpoint.
      zmq::message_t event, where;
      const auto next = [&monitor](zmq::message_t& frame) {
        return retry_interrupted([&] { return monitor.recv(frame, zmq::recv_flags::none); });
      };
      if (!next(event) || !next(where)) return;
      if (event.size() < 6) continue;
      std::uint16_t id = 0;
      std::int32_t value = 0;
      std::memcpy(&id, event.data(), 2);
      std::memcpy(&value, static_cast<const char*>(event.data()) + 2, 4);
      switch (id) {
        case ZMQ_EVENT_ACCEPTED:
          if (static_cast<std::int64_t>(open.size()) >= limits_.max_connections) {
            ::shutdown(value, SHUT_RDWR);
            refused.insert(value);
            ++own_failures;
            too_many.refuse("", now);
          } else {
            open.insert(value);
          }
          break;
        case ZMQ_EVENT_DISCONNECTED:
          open.erase(value);
          refused.erase(value);
          own_failures = std::min(own_failures, refused.size());
          break;
        case ZMQ_EVENT_ACCEPT_FAILED:
          if (value == EMFILE || value == ENFILE) no_fds.refuse("", now);
          break;
        default:  // the handshake failures
          if (id == ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL && own_failures > 0) {
            --own_failures;
          } else {
            failed.refuse("", now);
          }
      }
    }
    too_many.flush(now);
    no_fds.flush(now);
    failed.flush(now);
  }
}

}  // namespace packtune::protocol
