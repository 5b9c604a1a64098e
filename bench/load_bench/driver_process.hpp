#pragma once
// The driver under test: `packtune run`, spawned with its output in a log, reaped with its
// resource use, and its CPU time read while it runs (the figures' window is part of its life).
#include <sys/resource.h>
#include <sys/types.h>
#include <sys/wait.h>

#include <string>
#include <vector>

#include "bench/load_bench/clock.hpp"

namespace packtune::bench {

struct CpuTimes {
  double user = 0, system = 0;
  double total() const { return user + system; }
};

// utime and stime of a live process, from /proc/PID/stat (clock ticks).
CpuTimes process_cpu(pid_t pid);

class DriverProcess {
 public:
  DriverProcess(const std::vector<std::string>& argv, const std::string& log);
  ~DriverProcess();

  pid_t pid() const { return pid_; }
  bool running();
  // Waits for the driver to end by itself; kills it after `timeout`.
  void wait(double timeout);
  // The exit, once it exited: its status and resource use (getrusage of the child).
  int exit_code() const { return WIFEXITED(status_) ? WEXITSTATUS(status_) : 128 + WTERMSIG(status_); }
  const struct rusage& usage() const { return usage_; }
  Clock::time_point exited_at() const { return exited_at_; }
  [[noreturn]] void fail(const std::string& what) const;

 private:
  void record_exit(int status, const struct rusage& usage);

  std::string log_;
  pid_t pid_ = -1;
  bool exited_ = false;
  int status_ = 0;
  struct rusage usage_ {};
  Clock::time_point exited_at_;
};

}  // namespace packtune::bench
