// Spawning, watching and reaping the driver load_bench measures.
#include "bench/load_bench/driver_process.hpp"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <iterator>
#include <sstream>
#include <thread>

#include "packtune/error.hpp"

extern char** environ;

namespace packtune::bench {
namespace {

std::string tail_of(const std::string& path, std::size_t bytes) {
  std::ifstream in(path);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return text.size() > bytes ? "..." + text.substr(text.size() - bytes) : text;
}

}  // namespace

CpuTimes process_cpu(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const auto close = stat.rfind(')');
  if (close == std::string::npos) return {};
  std::istringstream fields(stat.substr(close + 2));
  std::string field;
  CpuTimes t;
  const double tick = static_cast<double>(sysconf(_SC_CLK_TCK));
  // Fields 3 ... 13 come before utime (14) and stime (15).
  for (int i = 3; i <= 15 && fields >> field; ++i) {
    if (i == 14) t.user = std::stod(field) / tick;
    if (i == 15) t.system = std::stod(field) / tick;
  }
  return t;
}

DriverProcess::DriverProcess(const std::vector<std::string>& argv, const std::string& log) : log_(log) {
  posix_spawn_file_actions_t files;
  posix_spawn_file_actions_init(&files);
  posix_spawn_file_actions_addopen(&files, STDOUT_FILENO, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&files, STDOUT_FILENO, STDERR_FILENO);
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const int rc = posix_spawnp(&pid_, args[0], &files, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&files);
  if (rc != 0) throw Error("cannot start " + argv[0] + ": " + std::strerror(rc) + "; pass --packtune PATH");
}

DriverProcess::~DriverProcess() {
  if (running()) {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }
}

bool DriverProcess::running() {
  if (exited_) return false;
  int status = 0;
  struct rusage usage {};
  if (::wait4(pid_, &status, WNOHANG, &usage) != pid_) return true;
  record_exit(status, usage);
  return false;
}

void DriverProcess::wait(double timeout) {
  const auto until = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(timeout));
  while (running()) {
    if (Clock::now() > until) {
      ::kill(pid_, SIGKILL);
      int status = 0;
      struct rusage usage {};
      ::wait4(pid_, &status, 0, &usage);
      record_exit(status, usage);
      throw Error("the driver did not exit within " + std::to_string(timeout) + " s of the experiment's end; see " +
                  log_);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

void DriverProcess::fail(const std::string& what) const {
  throw Error(what + "; the driver's log " + log_ + " ends:\n" + tail_of(log_, 3000));
}

void DriverProcess::record_exit(int status, const struct rusage& usage) {
  exited_ = true;
  status_ = status;
  usage_ = usage;
  exited_at_ = Clock::now();
}

}  // namespace packtune::bench
