// A stranger for security_test.sh: what a stranger who reaches the driver's port can do,
// each mode ending with a line that says what the driver did to it (pyzmq is not available,
// and raw sockets alone cannot offer CURVE keys).
//
//   stranger_peer big-frames HOST PORT CONNECTIONS NULL|CURVE
//       On each connection at once: a ZMTP 3.0 greeting for the mechanism, then a handshake
//       command declared 1 GiB long, and its bytes until the driver closes the connection.
//       Exits 0 when the driver closed every connection before 1 GiB had gone.
//   stranger_peer connections HOST PORT COUNT
//       Keeps COUNT quiet peers connected (the NULL handshake, then nothing; one the driver
//       closes comes back a second later) until standard input ends. Prints how many it
//       opened and how many the driver closed.
//   stranger_peer curve-keys ENDPOINT DRIVER_PUBLIC_KEY COUNT
//       COUNT ZeroMQ clients, each with a fresh CURVE key pair; exits 0 once the driver has
//       refused every one of them (each client's monitor saw the handshake fail on auth).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include <zmq.hpp>

namespace {

constexpr std::uint64_t kDeclared = std::uint64_t{1} << 30;

int connect_tcp(const std::string& host, int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return -1;
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<std::uint16_t>(port));
  inet_pton(AF_INET, host.c_str(), &address.sin_addr);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0) {
    ::close(fd);
    return -1;
  }
  // A driver that neither reads nor closes would hang the test: bound it (hangs only).
  timeval timeout{120, 0};
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof timeout);
  return fd;
}

bool send_all(int fd, const void* data, std::size_t size) {
  const char* p = static_cast<const char*>(data);
  while (size > 0) {
    const auto sent = ::send(fd, p, size, MSG_NOSIGNAL);
    if (sent <= 0) return false;
    p += sent;
    size -= static_cast<std::size_t>(sent);
  }
  return true;
}

// Bytes sent on one connection before the driver closed it; kDeclared + 1 if it never did.
std::uint64_t big_frame(const std::string& host, int port, const std::string& mechanism) {
  const int fd = connect_tcp(host, port);
  if (fd < 0) return 0;
  std::array<unsigned char, 64> greeting{};
  greeting[0] = 0xFF;
  greeting[9] = 0x7F;
  greeting[10] = 3;  // ZMTP 3.0
  greeting[11] = 0;
  std::memcpy(&greeting[12], mechanism.data(), mechanism.size());
  std::array<unsigned char, 9> header{0x06};  // a command, long: 8-byte size
  for (int i = 0; i < 8; ++i) header[1 + i] = static_cast<unsigned char>(kDeclared >> (8 * (7 - i)));
  std::uint64_t sent = 0;
  if (send_all(fd, greeting.data(), greeting.size()) && send_all(fd, header.data(), header.size())) {
    std::vector<char> block(1 << 20, 'x');
    while (sent < kDeclared && send_all(fd, block.data(), block.size())) sent += block.size();
  }
  ::close(fd);
  return sent >= kDeclared ? kDeclared + 1 : sent;
}

int big_frames(const std::string& host, int port, int connections, const std::string& mechanism) {
  std::vector<std::uint64_t> sent(connections);
  std::vector<std::thread> threads;
  for (int i = 0; i < connections; ++i) threads.emplace_back([&, i] { sent[i] = big_frame(host, port, mechanism); });
  for (auto& t : threads) t.join();
  int closed = 0;
  for (int i = 0; i < connections; ++i) {
    if (sent[i] <= kDeclared) ++closed;
    std::printf("connection %d: %s after %llu MiB of a 1024 MiB frame\n", i,
                sent[i] <= kDeclared ? "closed by the driver" : "NOT closed", static_cast<unsigned long long>(sent[i] >> 20));
  }
  std::printf("big-frames %s: %d of %d connections closed by the driver\n", mechanism.c_str(), closed, connections);
  return closed == connections ? 0 : 1;
}

// Whether `fd` is still open at the driver's end: what it sent is read and dropped; an end
// of stream or an error is the driver closing it. `wait_ms`: how long to wait for a first byte.
bool still_open(int fd, int wait_ms) {
  pollfd item{fd, POLLIN, 0};
  if (::poll(&item, 1, wait_ms) <= 0) return true;
  char buffer[4096];
  while (true) {
    const auto got = ::recv(fd, buffer, sizeof buffer, MSG_DONTWAIT);
    if (got > 0) continue;
    return got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
  }
}

// A connection that completes the NULL handshake as a DEALER and then says nothing: a peer
// the driver holds until it goes (no handshake timeout frees it).
int quiet_peer(const std::string& host, int port) {
  const int fd = connect_tcp(host, port);
  if (fd < 0) return -1;
  std::array<unsigned char, 64> greeting{};
  greeting[0] = 0xFF;
  greeting[9] = 0x7F;
  greeting[10] = 3;
  std::memcpy(&greeting[12], "NULL", 4);
  const std::string ready = std::string("\x05READY") + "\x0bSocket-Type" + std::string("\0\0\0\x06", 4) + "DEALER";
  const std::string command = std::string("\x04") + static_cast<char>(ready.size()) + ready;
  send_all(fd, greeting.data(), greeting.size());
  send_all(fd, command.data(), command.size());
  // One connection at a time: the next once the driver answered this one (its greeting) or
  // closed it, so that the crowd grows without a burst of accepts.
  pollfd item{fd, POLLIN, 0};
  ::poll(&item, 1, 120'000);  // bounds a hang only
  return fd;
}

int connections(const std::string& host, int port, int count) {
  std::vector<int> fds;
  std::atomic<bool> done{false};
  std::thread stdin_watch([&] {
    char c;
    while (::read(0, &c, 1) > 0) {}
    done = true;
  });
  long opened = 0, closed_by_driver = 0, failed = 0;
  while (!done) {
    while (static_cast<int>(fds.size()) < count && !done) {
      const int fd = quiet_peer(host, port);
      if (fd < 0) {
        ++failed;
        break;
      }
      fds.push_back(fd);
      ++opened;
    }
    // Once a second, those the driver closed come back: a crowd, not a flood.
    std::this_thread::sleep_for(std::chrono::seconds(1));
    std::vector<int> still;
    for (int fd : fds) {
      if (still_open(fd, 0)) {
        still.push_back(fd);
      } else {
        ::close(fd);
        ++closed_by_driver;
      }
    }
    fds = still;
  }
  for (int fd : fds) ::close(fd);
  std::printf("connections: opened %ld, closed by the driver %ld, failed to connect %ld\n", opened, closed_by_driver,
              failed);
  stdin_watch.join();
  return 0;
}

int curve_keys(const std::string& endpoint, const std::string& server_key, int count) {
  zmq::context_t context(1);
  context.set(zmq::ctxopt::max_sockets, 4 * count + 16);
  std::vector<zmq::socket_t> clients, monitors;
  for (int i = 0; i < count; ++i) {
    std::array<char, 41> public_key{}, secret_key{};
    zmq_curve_keypair(public_key.data(), secret_key.data());
    clients.emplace_back(context, zmq::socket_type::dealer);
    auto& client = clients.back();
    client.set(zmq::sockopt::linger, 0);
    client.set(zmq::sockopt::curve_serverkey, server_key);
    client.set(zmq::sockopt::curve_publickey, std::string(public_key.data()));
    client.set(zmq::sockopt::curve_secretkey, std::string(secret_key.data()));
    const auto monitor_endpoint = "inproc://monitor-" + std::to_string(i);
    zmq_socket_monitor(client.handle(), monitor_endpoint.c_str(), ZMQ_EVENT_HANDSHAKE_FAILED_AUTH);
    monitors.emplace_back(context, zmq::socket_type::pair);
    monitors.back().connect(monitor_endpoint);
    client.connect(endpoint);
  }
  std::vector<bool> refused(count, false);
  int refused_count = 0;
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::minutes(5);  // bounds a hang only
  while (refused_count < count && std::chrono::steady_clock::now() < give_up) {
    std::vector<zmq::pollitem_t> items;
    for (auto& m : monitors) items.push_back({m.handle(), 0, ZMQ_POLLIN, 0});
    zmq::poll(items.data(), items.size(), std::chrono::milliseconds(200));
    for (int i = 0; i < count; ++i) {
      if (!(items[i].revents & ZMQ_POLLIN)) continue;
      zmq::message_t event, where;
      (void)monitors[i].recv(event);
      (void)monitors[i].recv(where);
      if (!refused[i]) {
        refused[i] = true;
        ++refused_count;
      }
    }
  }
  for (auto& c : clients) c.close();
  for (auto& m : monitors) m.close();
  std::printf("curve-keys: the driver refused %d of %d keys\n", refused_count, count);
  return refused_count == count ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  const std::vector<std::string> args(argv + 1, argv + argc);
  if (args.size() == 5 && args[0] == "big-frames") {
    return big_frames(args[1], std::stoi(args[2]), std::stoi(args[3]), args[4]);
  }
  if (args.size() == 4 && args[0] == "connections") return connections(args[1], std::stoi(args[2]), std::stoi(args[3]));
  if (args.size() == 4 && args[0] == "curve-keys") return curve_keys(args[1], args[2], std::stoi(args[3]));
  std::fprintf(stderr, "usage: stranger_peer big-frames HOST PORT CONNECTIONS NULL|CURVE | connections HOST PORT COUNT "
                       "| curve-keys ENDPOINT DRIVER_PUBLIC_KEY COUNT\n");
  return 2;
}
