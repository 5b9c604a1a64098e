#include "actor_process/keepalive.hpp"

#include <algorithm>
#include <chrono>

#include "protocol/zmq_channel.hpp"

namespace packtune::actor_process {

Keepalive::Keepalive(zmq::socket_t& socket, double seconds)
    : thread_([this, &socket, seconds] {
        const auto period = std::chrono::duration<double>(std::max(seconds, 0.1));
        std::unique_lock<std::mutex> lock(mutex_);
        while (!cv_.wait_for(lock, period, [this] { return stopped_; })) {
          try {
            send_message(socket, protocol::Heartbeat{});
          } catch (const zmq::error_t&) {
            return;  // the socket's trouble is the loop's to report, at its next send
          }
        }
      }) {}

void Keepalive::stop() {
  if (!thread_.joinable()) return;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopped_ = true;
  }
  cv_.notify_one();
  thread_.join();
}

}  // namespace packtune::actor_process
