#include "protocol/peer_guard.hpp"

#include <sys/resource.h>
#include <sys/socket.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <memory>
#include <unordered_map>

#include "packtune/error.hpp"
#include "protocol/curve_keys.hpp"
#include "protocol/interrupted.hpp"
#include "protocol/refusal_log.hpp"

namespace packtune::protocol {

PeerGuard::Limits PeerGuard::raise_fd_limit() {
  rlimit r{};
  if (getrlimit(RLIMIT_NOFILE, &r) != 0) return limits_for(1024);
  if (r.rlim_cur < r.rlim_max) {
    rlimit raised = r;
    raised.rlim_cur = r.rlim_max;
    if (setrlimit(RLIMIT_NOFILE, &raised) == 0) r = raised;
  }
  return limits_for(r.rlim_cur == RLIM_INFINITY ? std::int64_t{1} << 20 : static_cast<std::int64_t>(r.rlim_cur));
}

PeerGuard::Limits PeerGuard::limits_for(std::int64_t fd_limit) {
  Limits limits;
  limits.fd_limit = fd_limit;
  // A quarter of the descriptors, and at least kReservedFds, stay for everything else.
  const auto reserved = std::max(kReservedFds, limits.fd_limit / 4);
  limits.max_connections = std::clamp<std::int64_t>(limits.fd_limit - reserved, 1, kMaxConnections);
  // Refused peers hold a descriptor for the length of a handshake (milliseconds) before they
  // close: half the reserve lets a crowd of them be answered ZAP's 400, and so back off
  // (redial.hpp). A connection cut before its handshake is, for libzmq, a broken one, which its
  // peer reconnects every 100-200 ms without backing off: with a quarter of the reserve, 9,850
  // actors against a cap of 3,072 were cut 33,866 times in 20 s and refused by ZAP 2,943 times.
  limits.max_open = limits.max_connections + std::max<std::int64_t>(16, reserved / 2);
  return limits;
}

struct PeerGuard::Logs {
  RefusalLog over_cap, too_many_open, no_fds, failed;
};

PeerGuard::PeerGuard(zmq::context_t& context, zmq::socket_t& socket, Limits limits, CurveServer* curve)
    : limits_(limits), curve_(curve) {
  // Bounds the time a connection holds its descriptor before it proves to be a packtune peer:
  // idle connections, and handshakes a peer started and never finished, go after 10 s.
  socket.set(zmq::sockopt::handshake_ivl, kHandshakeMilliseconds);
  // The handler is bound before the socket listens, so that no handshake finds it missing
  // (libzmq would then let a NULL-mechanism peer in unasked).
  auto zap = std::make_shared<zmq::socket_t>(context, zmq::socket_type::rep);
  zap->set(zmq::sockopt::linger, 0);
  zap->bind("inproc://zeromq.zap.01");
  socket.set(zmq::sockopt::zap_domain, "packtune");
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
  const std::string limit_text = "for a file-descriptor limit, ulimit -n, of " + std::to_string(limits_.fd_limit) +
                                 "; the rest is kept for the driver's own files";
  logs_ = std::make_unique<Logs>(Logs{
      RefusalLog("new connection(s): too many connections (at most " + std::to_string(limits_.max_connections) +
                 " at once, " + limit_text + "); refused peers try again, less and less often"),
      RefusalLog("new connection(s) before their handshake: too many connections (at most " +
                 std::to_string(limits_.max_open) + " open at once, handshakes included, " + limit_text + ")"),
      RefusalLog("connection(s): out of file descriptors (the limit, ulimit -n, is " +
                 std::to_string(limits_.fd_limit) + "); new peers wait until connections close"),
      // With keys, a key refused here fails the handshake too: counted here as well.
      RefusalLog(curve_ ? "connection(s) that failed the CURVE handshake (not a packtune actor, or one with "
                          "another driver's key or an unknown key)"
                        : "connection(s) that failed the ZeroMQ handshake (not a packtune peer)")});
  thread_ = std::thread([this, zap] { watch(*zap); });
}

PeerGuard::~PeerGuard() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
}

void PeerGuard::watch(zmq::socket_t& zap) {
  std::vector<zmq::message_t> request;
  while (!stop_) {
    std::array<zmq::pollitem_t, 2> items{{{monitor_->handle(), 0, ZMQ_POLLIN, 0}, {zap.handle(), 0, ZMQ_POLLIN, 0}}};
    retry_interrupted([&] { return zmq::poll(items.data(), items.size(), std::chrono::milliseconds(100)); });
    const auto now = Clock::now();
    drain(now);
    // Every request waiting, each answered before the next is read (a REP socket).
    while (true) {
      request.clear();
      request.emplace_back();
      if (!retry_interrupted([&] { return zap.recv(request.back(), zmq::recv_flags::dontwait); })) break;
      while (request.back().more()) {
        request.emplace_back();
        if (!retry_interrupted([&] { return zap.recv(request.back(), zmq::recv_flags::none); })) break;
      }
      // libzmq queued the asking connection's ACCEPTED before it sent the request: read now,
      // the connection is counted, or cut, before it is answered, so that no connection
      // admitted is shut down afterwards.
      drain(now);
      answer(zap, request, now);
    }
    logs_->over_cap.flush(now);
    logs_->too_many_open.flush(now);
    logs_->no_fds.flush(now);
    logs_->failed.flush(now);
    if (curve_) curve_->flush(now);
  }
}

void PeerGuard::drain(Clock::time_point now) {
  std::vector<Event> events;
  while (true) {
    // A monitor event: [16-bit event, 32-bit value], then the endpoint.
    zmq::message_t event, where;
    const auto next = [this](zmq::message_t& frame) {
      return retry_interrupted([&] { return monitor_->recv(frame, zmq::recv_flags::dontwait); });
    };
    if (!next(event)) break;
    if (event.more() && !next(where)) break;
    if (event.size() < 6) continue;
    Event e{};
    std::memcpy(&e.id, event.data(), 2);
    std::memcpy(&e.value, static_cast<const char*>(event.data()) + 2, 4);
    events.push_back(e);
  }
  // A connection accepted and gone within the batch must not be shut down: its descriptor may
  // already be a newer connection's.
  std::unordered_map<int, std::size_t> last_gone;
  for (std::size_t i = 0; i < events.size(); ++i) {
    if (events[i].id == ZMQ_EVENT_DISCONNECTED) last_gone[events[i].value] = i;
  }
  for (std::size_t i = 0; i < events.size(); ++i) {
    if (events[i].id == ZMQ_EVENT_ACCEPTED) {
      const auto gone = last_gone.find(events[i].value);
      on_accepted(events[i].value, gone != last_gone.end() && gone->second > i, now);
    } else {
      on_event(events[i], now);
    }
  }
}

void PeerGuard::on_accepted(int fd, bool gone_already, Clock::time_point now) {
  Connection connection;
  connection.serial = ++serials_;
  if (static_cast<std::int64_t>(open_.size()) >= limits_.max_open) {
    if (!gone_already) ::shutdown(fd, SHUT_RDWR);
    connection.cut = true;
    ++own_failures_;
    logs_->too_many_open.refuse("", now);
  } else {
    unsettled_.push_back({now, {fd, connection.serial}});
  }
  open_[fd] = connection;
}

void PeerGuard::on_event(const Event& event, Clock::time_point now) {
  switch (event.id) {
    case ZMQ_EVENT_DISCONNECTED: {
      const auto it = open_.find(event.value);
      if (it == open_.end()) break;
      if (it->second.settled) --settled_;
      open_.erase(it);
      break;
    }
    case ZMQ_EVENT_ACCEPT_FAILED:
      if (event.value == EMFILE || event.value == ENFILE) logs_->no_fds.refuse("", now);
      break;
    case ZMQ_EVENT_HANDSHAKE_FAILED_AUTH:
      if (own_auth_failures_ > 0) {
        --own_auth_failures_;
      } else {
        logs_->failed.refuse("", now);
      }
      break;
    default:  // the other handshake failures
      if (event.id == ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL && own_failures_ > 0) {
        --own_failures_;
      } else {
        logs_->failed.refuse("", now);
      }
  }
}

bool PeerGuard::has_room(Clock::time_point now) {
  const auto settled_before = now - std::chrono::milliseconds(kSettledMilliseconds);
  while (!grants_.empty() && grants_.front() <= settled_before) grants_.pop_front();
  while (!unsettled_.empty() && unsettled_.front().first <= settled_before) {
    const auto [fd, serial] = unsettled_.front().second;
    unsettled_.pop_front();
    const auto it = open_.find(fd);
    if (it != open_.end() && it->second.serial == serial && !it->second.cut) {
      it->second.settled = true;
      ++settled_;
    }
  }
  return settled_ + static_cast<std::int64_t>(grants_.size()) < limits_.max_connections;
}

void PeerGuard::answer(zmq::socket_t& zap, std::vector<zmq::message_t>& request, Clock::time_point now) {
  // ZAP (ZeroMQ RFC 27): version, request id, domain, address, routing id, mechanism,
  // credentials.
  const auto text = [&](std::size_t i) { return i < request.size() ? request[i].to_string() : std::string(); };
  const bool key = curve_ == nullptr || curve_->authenticates(request, now);
  const bool admitted = key && has_room(now);
  if (admitted) {
    grants_.push_back(now);
  } else if (key) {
    ++own_auth_failures_;
    logs_->over_cap.refuse("", now);
  }
  const std::array<std::string, 6> reply{"1.0", text(1), admitted ? "200" : "400",
                                         admitted ? "OK" : key ? "too many connections" : "unknown key", "", ""};
  for (std::size_t i = 0; i < reply.size(); ++i) {
    const auto flags = i + 1 < reply.size() ? zmq::send_flags::sndmore : zmq::send_flags::none;
    retry_interrupted([&] { return zap.send(zmq::buffer(reply[i]), flags); });
  }
}

}  // namespace packtune::protocol
