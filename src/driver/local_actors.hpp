#pragma once
// The driver's own actors (node 0): started under the supervisor a `packtune node` uses, so
// that they restart the same way, and watched from the driver's loop: their exits go to the
// core, and a process that hangs (silent after joining, or never joining) is killed so that
// the driver never waits for a slot that cannot come back.
#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <utility>

#include "driver/driver_core.hpp"
#include "node/actor_supervisor.hpp"

namespace packtune {

class LocalActors {
 public:
  using Clock = std::chrono::steady_clock;

  // `join_seconds`: how long a started process may take to say Hello (the longer of
  // join_timeout_seconds and actor_timeout_seconds: a loaded machine may take seconds to load
  // LibTorch, and a short actor timeout is for silence after joining).
  LocalActors(DriverCore& core, double join_seconds) : core_(core), join_seconds_(join_seconds) {}
  // Kills what still runs and removes their work folders, whatever ended the run.
  ~LocalActors();
  LocalActors(const LocalActors&) = delete;
  LocalActors& operator=(const LocalActors&) = delete;

  // Registers node 0 with the core and starts `count` actors connecting to `endpoint`, each
  // logging into LOG_DIR/actor-I.log; with 0 the node has no actors.
  void start(int count, const std::string& endpoint, int threads, const std::string& keys, const std::string& log_dir);
  // One look from the loop: hung actors killed, exits reported to the core.
  void poll();
  // Stops them (10 s to exit, then killed) and removes their work folders.
  void shutdown();
  std::string log_path(int local_index) const { return supervisor_->log_path(local_index); }

 private:
  void kill_unjoined();
  void remove_work_dir();

  DriverCore& core_;
  double join_seconds_;
  std::unique_ptr<ActorSupervisor> supervisor_;  // none with "actors": 0
  std::string work_dir_;                          // their work folders, removed at the end
  std::map<int, std::pair<int, Clock::time_point>> unjoined_;  // slot -> its process, not joined since
  Clock::time_point next_unjoined_check_;
};

}  // namespace packtune
