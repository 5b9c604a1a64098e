#include "node/local_actors.hpp"

#include <cstdlib>

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <thread>
#include <vector>

#include "packtune/error.hpp"

namespace packtune {

std::string self_executable() {
  std::error_code ec;
  auto p = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) throw Error("cannot find the packtune executable (/proc/self/exe): " + ec.message());
  return p.string();
}

LocalActors::LocalActors(std::string endpoint, std::string log_dir, int threads_per_actor, std::string keys_dir)
    : endpoint_(std::move(endpoint)), log_dir_(std::move(log_dir)), threads_(threads_per_actor),
      keys_dir_(std::move(keys_dir)) {}

LocalActors::~LocalActors() { wait_all(0); }

std::string LocalActors::log_path(int local_index) const {
  return log_dir_ + "/actor-" + std::to_string(local_index) + ".log";
}

void LocalActors::spawn(int count) {
  std::filesystem::create_directories(log_dir_);
  const std::string exe = self_executable();
  // libgomp's threads spin between parallel regions by default; on a few busy cores a
  // training step's many small regions then wait on descheduled spinners (pack_bench: 3-7x
  // slower at two threads). Passive waiting costs nothing measurable. A user's setting wins.
  setenv("OMP_WAIT_POLICY", "PASSIVE", 0);
  for (int n = 0; n < count; ++n) {
    const int index = static_cast<int>(pids_.size());
    const std::string log = log_path(index);
    const std::string index_text = std::to_string(index);
    const std::string threads_text = std::to_string(threads_);
    // Built before fork: the child of a threaded process must not allocate.
    std::vector<const char*> argv{exe.c_str(), "actor", "--driver", endpoint_.c_str(), "--local-index",
                                  index_text.c_str(), "--threads", threads_text.c_str()};
    if (!keys_dir_.empty()) {
      argv.push_back("--keys");
      argv.push_back(keys_dir_.c_str());
    }
    argv.push_back(nullptr);
    const pid_t parent = getpid();
    const pid_t pid = fork();
    if (pid < 0) throw Error("cannot start an actor process (fork failed); too many processes?");
    if (pid == 0) {
      // An actor must not outlive its driver, even when the driver is killed hard.
      prctl(PR_SET_PDEATHSIG, SIGTERM);
      if (getppid() != parent) _exit(1);
      const int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      if (fd >= 0) {
        dup2(fd, STDOUT_FILENO);
        dup2(fd, STDERR_FILENO);
        close(fd);
      }
      execv(exe.c_str(), const_cast<char* const*>(argv.data()));
      _exit(127);
    }
    pids_.push_back(pid);
  }
}

std::vector<LocalActorExit> LocalActors::reap() {
  std::vector<LocalActorExit> out;
  for (std::size_t i = 0; i < pids_.size(); ++i) {
    if (pids_[i] < 0) continue;
    int status = 0;
    if (waitpid(pids_[i], &status, WNOHANG) == pids_[i]) {
      LocalActorExit e{static_cast<int>(i), pids_[i], ""};
      e.how = WIFEXITED(status) ? "exited with code " + std::to_string(WEXITSTATUS(status))
                                : "killed by signal " + std::to_string(WTERMSIG(status));
      pids_[i] = -1;
      out.push_back(e);
    }
  }
  return out;
}

int LocalActors::running() const {
  int n = 0;
  for (int pid : pids_) n += pid >= 0;
  return n;
}

void LocalActors::wait_all(double seconds) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (running() > 0 && std::chrono::steady_clock::now() < deadline) {
    reap();
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  for (auto& pid : pids_) {
    if (pid < 0) continue;
    kill(pid, SIGKILL);
    waitpid(pid, nullptr, 0);
    pid = -1;
  }
}

}  // namespace packtune
