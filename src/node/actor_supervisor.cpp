#include "node/actor_supervisor.hpp"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <thread>

#include <spdlog/spdlog.h>

#include "packtune/error.hpp"
#include "util/child_process.hpp"

namespace packtune {
namespace {

std::string exit_cause(int status) {
  if (WIFEXITED(status)) return "exited with code " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return "killed by signal " + std::to_string(WTERMSIG(status));
  return "stopped (status " + std::to_string(status) + ")";
}

std::string local_time() {
  char stamp[32];
  const std::time_t now = std::time(nullptr);
  std::strftime(stamp, sizeof stamp, "%Y-%m-%d %H:%M:%S", std::localtime(&now));
  return stamp;
}

}  // namespace

std::string self_executable() {
  std::error_code ec;
  auto p = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) throw Error("cannot find the packtune executable (/proc/self/exe): " + ec.message());
  return p.string();
}

ActorCommand actor_command(const std::string& driver, int node_id, int local_index, int threads,
                           const std::string& work_dir, const std::string& keys) {
  ActorCommand command{{self_executable(), "actor", "--driver", driver, "--node", std::to_string(node_id),
                        "--local-index", std::to_string(local_index), "--threads", std::to_string(threads),
                        "--work-dir", work_dir + "/actor-" + std::to_string(local_index)},
                       {}};
  if (!keys.empty()) {
    command.argv.push_back("--keys");
    command.argv.push_back(keys);
  }
  return command;
}

ActorSupervisor::ActorSupervisor(SupervisorOptions options, Now now)
    : options_(std::move(options)), now_(std::move(now)) {}

ActorSupervisor::~ActorSupervisor() { stop(0); }

double ActorSupervisor::restart_delay(const SupervisorOptions& options, int restart) {
  const double delay = options.first_delay_seconds * std::pow(2.0, std::min(restart, 62));
  return std::min(delay, options.max_delay_seconds);
}

std::string ActorSupervisor::log_path(int local_index) const {
  return options_.log_dir + "/actor-" + std::to_string(local_index) + ".log";
}

int ActorSupervisor::start(ActorCommand command) {
  if (command.argv.empty()) throw Error("an actor command needs at least the executable");
  std::filesystem::create_directories(options_.log_dir);
  slots_.push_back(Slot{std::move(command)});
  const int index = static_cast<int>(slots_.size()) - 1;
  launch(index, false);
  return index;
}

void ActorSupervisor::launch(int local_index, bool restart) {
  Slot& slot = slots_[local_index];
  const std::string log = log_path(local_index);
  if (restart) {
    // The log keeps every run of the slot; a line marks where the next one starts.
    if (FILE* f = std::fopen(log.c_str(), "a")) {
      std::fprintf(f, "\n----- %s: restart %d of %d (the previous process %s) -----\n", local_time().c_str(),
                   slot.restarts, options_.max_restarts, slot.last_exit.c_str());
      std::fclose(f);
    }
  }
  // libgomp's threads spin between parallel regions by default; on a few busy cores a
  // training step's many small regions then wait on descheduled spinners (pack_bench: 3-7x
  // slower at two threads). Passive waiting costs nothing measurable. A user's setting wins.
  setenv("OMP_WAIT_POLICY", "PASSIVE", 0);
  const int pid = util::start_child_process(slot.command.argv, slot.command.env, log, restart);
  if (pid < 0) throw Error("cannot start an actor process (fork failed: " + std::string(std::strerror(-pid)) +
                           "); too many processes?");
  slot.pid = pid;
  slot.waiting = false;
}

std::vector<SupervisorEvent> ActorSupervisor::reap() {
  std::vector<SupervisorEvent> events;
  for (std::size_t i = 0; i < slots_.size(); ++i) {
    Slot& slot = slots_[i];
    if (slot.pid < 0) continue;
    int status = 0;
    if (waitpid(slot.pid, &status, WNOHANG) != slot.pid) continue;
    const int index = static_cast<int>(i);
    const std::string how = slot.kill_reason.empty() ? exit_cause(status) : "killed: " + slot.kill_reason;
    slot.kill_reason.clear();
    SupervisorEvent exited{SupervisorEvent::Kind::Exited, index, slot.pid, how, false, slot.restarts};
    // Code 2 is the CLI's bad input (a device this machine lacks, a data set it cannot read).
    exited.input_error = WIFEXITED(status) && WEXITSTATUS(status) == 2;
    // Exit code 0 is an actor the driver shut down: its work is over, not lost.
    exited.clean = WIFEXITED(status) && WEXITSTATUS(status) == 0;
    const bool clean = exited.clean;
    slot.pid = -1;
    slot.last_exit = exited.how;
    if (!restarting_ || clean) {
      // A clean exit is the end of an experiment, not news.
      spdlog::log(clean ? spdlog::level::debug : spdlog::level::info, "actor process {} (pid {}) {}", index,
                  exited.pid, exited.how);
      events.push_back(exited);
    } else if (slot.restarts >= options_.max_restarts || exited.input_error) {
      slot.gave_up = true;
      events.push_back(exited);
      if (exited.input_error) {
        spdlog::error("actor process {} {}: bad input, which a restart would meet again; giving it up, see {}", index,
                      exited.how, log_path(index));
      } else {
        spdlog::error("actor process {} {} after {} restart(s); giving it up, see {}", index, exited.how,
                      slot.restarts, log_path(index));
      }
      events.push_back({SupervisorEvent::Kind::GaveUp, index, exited.pid, exited.how, false, slot.restarts});
    } else {
      const double delay = restart_delay(options_, slot.restarts);
      slot.waiting = true;
      slot.restart_at = now_() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(delay));
      exited.restarting = true;
      spdlog::warn("actor process {} (pid {}) {}; restarting it in {:g} s (restart {} of {}), see {}", index,
                   exited.pid, exited.how, delay, slot.restarts + 1, options_.max_restarts, log_path(index));
      events.push_back(exited);
    }
  }
  return events;
}

std::vector<SupervisorEvent> ActorSupervisor::poll() {
  auto events = reap();
  const auto now = now_();
  for (std::size_t i = 0; i < slots_.size(); ++i) {
    Slot& slot = slots_[i];
    if (!slot.waiting || !restarting_ || now < slot.restart_at) continue;
    ++slot.restarts;
    launch(static_cast<int>(i), true);
    spdlog::info("actor process {} restarted (pid {}, restart {} of {})", i, slot.pid, slot.restarts,
                 options_.max_restarts);
    events.push_back({SupervisorEvent::Kind::Restarted, static_cast<int>(i), slot.pid, "", false, slot.restarts});
  }
  return events;
}

bool ActorSupervisor::kill_hung(int local_index, std::int64_t pid, const std::string& reason) {
  if (local_index < 0 || local_index >= slots() || pid <= 0) return false;
  Slot& slot = slots_[local_index];
  if (slot.pid != pid) return false;
  slot.kill_reason = reason;
  spdlog::warn("actor process {} (pid {}) hangs ({}); killing it", local_index, pid, reason);
  ::kill(slot.pid, SIGKILL);
  return true;
}

void ActorSupervisor::stop_restarting() {
  restarting_ = false;
  for (auto& slot : slots_) slot.waiting = false;
}

std::vector<SupervisorEvent> ActorSupervisor::stop(double grace_seconds, int signal) {
  std::vector<SupervisorEvent> events;
  stop_restarting();
  if (signal != 0) {
    for (const auto& slot : slots_) {
      if (slot.pid >= 0) kill(slot.pid, signal);
    }
  }
  // Real time, not the injected clock: this waits for processes.
  const auto deadline = Clock::now() + std::chrono::duration<double>(grace_seconds);
  while (running() > 0) {
    for (auto& e : reap()) events.push_back(std::move(e));
    if (running() == 0 || Clock::now() >= deadline) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  for (auto& slot : slots_) {
    if (slot.pid < 0) continue;
    const int index = static_cast<int>(&slot - slots_.data());
    spdlog::warn("actor process {} (pid {}) did not exit within {:g} s; killing it", index, slot.pid, grace_seconds);
    kill(slot.pid, SIGKILL);
    waitpid(slot.pid, nullptr, 0);
    events.push_back({SupervisorEvent::Kind::Exited, index, slot.pid, "killed by signal 9", false, slot.restarts});
    slot.pid = -1;
  }
  return events;
}

int ActorSupervisor::running() const {
  return static_cast<int>(std::count_if(slots_.begin(), slots_.end(), [](const Slot& s) { return s.pid >= 0; }));
}

int ActorSupervisor::active() const {
  return static_cast<int>(
      std::count_if(slots_.begin(), slots_.end(), [](const Slot& s) { return s.pid >= 0 || s.waiting; }));
}

}  // namespace packtune
