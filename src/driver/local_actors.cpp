#include "driver/local_actors.hpp"

#include <filesystem>

#include <fmt/format.h>

#include "util/host_name.hpp"
#include "util/work_folder.hpp"

namespace packtune {

LocalActors::~LocalActors() {
  if (supervisor_) supervisor_->stop(0);
  remove_work_dir();
}

void LocalActors::start(int count, const std::string& endpoint, int threads, const std::string& keys,
                        const std::string& log_dir) {
  core_.add_local_node(util::host_name(), Clock::now());
  if (count == 0) return;
  SupervisorOptions supervision;
  supervision.log_dir = log_dir;
  supervisor_ = std::make_unique<ActorSupervisor>(supervision);
  work_dir_ = util::fresh_work_dir("driver");
  for (int i = 0; i < count; ++i) supervisor_->start(actor_command(endpoint, 0, i, threads, work_dir_, keys));
}

void LocalActors::poll() {
  if (!supervisor_) return;
  for (const auto& hung : core_.take_hung_local_actors()) supervisor_->kill_hung(hung.local_index, hung.pid, hung.reason);
  kill_unjoined();
  for (const auto& e : supervisor_->poll()) {
    if (e.kind != SupervisorEvent::Kind::Exited) continue;
    core_.on_local_actor_exited(protocol::ActorExited{e.local_index, e.pid, e.how, e.restarting, e.input_error},
                                Clock::now());
  }
}

// A process that has not joined (said Hello) within join_seconds_ of its start hangs as much
// as a silent actor (stopped, or stuck before its Hello): it is killed and restarts.
void LocalActors::kill_unjoined() {
  // Each look goes over the slots and the registry's actors: once a second is plenty for
  // timeouts of seconds, and keeps it off the loop's turn, which comes every batch.
  const auto now = Clock::now();
  if (now < next_unjoined_check_) return;
  next_unjoined_check_ = now + std::chrono::seconds(1);
  const auto limit = std::chrono::duration<double>(join_seconds_);
  for (int i = 0; i < supervisor_->slots(); ++i) {
    const int pid = supervisor_->pid(i);
    if (pid < 0 || core_.registry().slot_joined(0, i, pid)) {
      unjoined_.erase(i);
      continue;
    }
    auto [it, first] = unjoined_.try_emplace(i, pid, now);
    if (!first && it->second.first != pid) it->second = {pid, now};
    if (now - it->second.second > limit) {
      supervisor_->kill_hung(i, pid, fmt::format("it did not join the driver within {:g} s of its start", join_seconds_));
      unjoined_.erase(it);
    }
  }
}

void LocalActors::shutdown() {
  if (supervisor_) supervisor_->stop(10);
  remove_work_dir();
}

void LocalActors::remove_work_dir() {
  if (work_dir_.empty()) return;
  std::error_code ec;
  std::filesystem::remove_all(work_dir_, ec);
}

}  // namespace packtune
