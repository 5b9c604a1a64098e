#pragma once
// A thread that sends the driver heartbeats while the actor's own thread is busy with something
// long that sends nothing: loading a plugin, a device and the data set before Ready, or measuring
// a heavy shape's memory or step time, or testing a final model. Past the driver's
// actor_timeout_seconds a silent actor is killed as hung (a ResNet-18's memory profile on one
// CPU thread took over the default 60 s). The busy thread must not use the socket meanwhile:
// stop() (or the destructor) joins the heartbeat thread and hands the socket back.
#include <condition_variable>
#include <mutex>
#include <thread>

#include <zmq.hpp>

namespace packtune::actor_process {

class Keepalive {
 public:
  Keepalive(zmq::socket_t& socket, double seconds);
  ~Keepalive() { stop(); }
  Keepalive(const Keepalive&) = delete;
  Keepalive& operator=(const Keepalive&) = delete;
  void stop();

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  bool stopped_ = false;
  std::thread thread_;  // last: starts once the rest is built
};

}  // namespace packtune::actor_process
